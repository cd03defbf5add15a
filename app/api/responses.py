"""The error replies of the API as OpenAPI sees them, so clients (and Schemathesis) know
every status a route may answer and the one body all errors share (issue 10)."""

from typing import Any

from pydantic import BaseModel


class FieldProblem(BaseModel):
    """One reason a request was refused, by the field it concerns."""

    field: str
    reason: str


class Problem(BaseModel):
    """What went wrong: the status again, a short title and the reason in words."""

    status: int
    title: str
    detail: str
    errors: list[FieldProblem] | None = None


class ProblemBody(BaseModel):
    """The body of every error reply: {"error": {...}} (app.errors.AppError.body)."""

    error: Problem


_DESCRIPTIONS = {
    400: "Bad request (an invalid cursor or query)",
    401: "The admin token is missing or wrong",
    403: "Writes are off: no admin token is configured",
    404: "No such record",
    409: "A record with this id exists",
    413: "The body or the paste is too large",
    422: "The request or the record is invalid; `errors` names each field",
    503: "Busy (the write lock or the match deadline); retry after `Retry-After` seconds",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route that may answer these error statuses."""
    return {
        status: {"model": ProblemBody, "description": _DESCRIPTIONS[status]} for status in statuses
    }
