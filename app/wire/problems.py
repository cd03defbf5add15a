"""The one body every error of the API answers: RFC 9457 problem details."""

from pydantic import BaseModel

from app.app_error import PROBLEM_TYPE


class FieldProblem(BaseModel):
    """One reason a request was refused, by the field it concerns."""

    field: str
    reason: str


class Problem(BaseModel):
    """RFC 9457 problem details (`application/problem+json`): what went wrong, the status
    again, the request path as `instance`, and `errors` naming each refused field."""

    type: str = PROBLEM_TYPE
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[FieldProblem] | None = None
