"""The error replies of the API as OpenAPI sees them: RFC 9457 problem details, so clients
(and Schemathesis) know every status a route may answer and the one body all errors share."""

from collections.abc import Callable
from typing import Any

from app.app_error import PROBLEM_MEDIA
from app.jsontext import NO_NUL
from app.wire.problems import Problem

PROBLEM_REF = "#/components/schemas/Problem"
JSON_VALUE_REF = "#/components/schemas/JsonValue"
JSON_VALUE = {
    "description": "Any JSON value whose strings and keys hold no NUL (app.jsontext).",
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": ["number", "boolean", "null"]},
        {"type": "array", "items": {"$ref": JSON_VALUE_REF}},
        {
            "type": "object",
            "propertyNames": {"pattern": NO_NUL},
            "additionalProperties": {"$ref": JSON_VALUE_REF},
        },
    ],
}


def json_object(required: dict[str, Any]) -> dict[str, Any]:
    """The schema of a JSON body: an object with these `required` properties, and any other
    property the server reads past, as long as it holds no NUL."""
    return {
        "type": "object",
        "required": list(required),
        "properties": required,
        "propertyNames": {"pattern": NO_NUL},
        "additionalProperties": {"$ref": JSON_VALUE_REF},
    }


_FASTAPI_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")


_DESCRIPTIONS = {
    400: "Bad request (an invalid cursor or query)",
    401: "The admin token is missing or wrong",
    403: "Writes are off: no admin token is configured",
    404: "No such record",
    409: "A record with this id exists",
    413: "The body or the paste is too large",
    422: "The request or the record is invalid; `errors` names each field",
    429: "This client's paste budget is spent; retry after `Retry-After` seconds",
    503: "Busy (the write lock or the match deadline); retry after `Retry-After` seconds",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route that may answer these error statuses."""
    return {status: {"model": Problem, "description": _DESCRIPTIONS[status]} for status in statuses}


def with_problem_details(openapi: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """`app.openapi` that documents every 4xx and 5xx under /api as what it really is: a
    Problem in `application/problem+json`. FastAPI's own HTTPValidationError (which no
    route answers: app.main turns validation errors into problems) is left out."""

    def schema() -> dict[str, Any]:
        document = openapi()  # FastAPI caches this dict: rewriting it once is enough
        for path, item in document["paths"].items():
            if not path.startswith("/api"):
                continue
            for operation in item.values():
                for status, response in operation.get("responses", {}).items():
                    if status[0] in "45":
                        response["content"] = {PROBLEM_MEDIA: {"schema": {"$ref": PROBLEM_REF}}}
        schemas = document.setdefault("components", {}).setdefault("schemas", {})
        for name in _FASTAPI_VALIDATION_SCHEMAS:
            schemas.pop(name, None)
        schemas["JsonValue"] = JSON_VALUE
        return document

    return schema
