"""Errors are RFC 9457 problem details, and /openapi.json documents them and the typed
record as they really are."""

import json

import pytest
from jsonschema import Draft202012Validator

from app.app_error import PROBLEM_MEDIA
from app.records.validation import record_schema
from tests.helpers.records import DATA_DIR

SEED = "c53f6de81577a6bc"
RECORD_REF = "#/components/schemas/ErrorRecord"
PROBLEM_REF = "#/components/schemas/Problem"


@pytest.fixture
def openapi(client) -> dict:
    return client.get("/openapi.json").json()


def _problem_validator(openapi: dict) -> Draft202012Validator:
    schema = openapi["components"]["schemas"]["Problem"] | {"components": openapi["components"]}
    return Draft202012Validator(schema)


def test_get_post_and_put_carry_the_typed_record(openapi) -> None:
    errors = openapi["paths"]["/api/errors"]
    one = openapi["paths"]["/api/errors/{record_id}"]
    for body in (errors["post"]["requestBody"], one["put"]["requestBody"]):
        assert body["content"]["application/json"]["schema"] == {"$ref": RECORD_REF}
    got = one["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    document = openapi["components"]["schemas"][got.rsplit("/", 1)[1]]
    assert document["properties"]["record"] == {"$ref": RECORD_REF}
    record = openapi["components"]["schemas"]["ErrorRecord"]
    assert record["additionalProperties"] is False
    assert record["required"] == record_schema()["required"]
    assert list(record["properties"]) == list(record_schema()["properties"])
    assert record["properties"]["id"]["pattern"] == "^[0-9a-f]{16}$"
    assert record["properties"]["errorMessage"]["maxLength"] == 4000


def test_every_documented_error_is_a_problem(openapi) -> None:
    documented = 0
    for path, item in openapi["paths"].items():
        if not path.startswith("/api"):
            continue
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if status[0] in "45":
                    documented += 1
                    content = response["content"]
                    assert content == {PROBLEM_MEDIA: {"schema": {"$ref": PROBLEM_REF}}}, (
                        method,
                        path,
                        status,
                    )
    assert documented > 20
    assert "HTTPValidationError" not in json.dumps(openapi)


def _assert_problem(response, status: int, openapi: dict) -> dict:
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM_MEDIA
    body = response.json()
    _problem_validator(openapi).validate(body)
    assert body["status"] == status
    assert body["type"] == "about:blank"
    assert body["title"]
    assert body["detail"]
    return body


def test_real_errors_are_problems_as_documented(
    client, make_client, openapi, seed_records, auth
) -> None:
    missing = client.get("/api/errors/0000000000000000")
    assert _assert_problem(missing, 404, openapi)["instance"] == "/api/errors/0000000000000000"
    taken = client.post("/api/errors", json=seed_records[SEED], headers=auth)
    _assert_problem(taken, 409, openapi)
    broken = dict(seed_records[SEED], id="00000000000000ff", severity="fatal")
    invalid = _assert_problem(client.post("/api/errors", json=broken, headers=auth), 422, openapi)
    assert invalid["errors"][0]["field"] == "severity"
    query = _assert_problem(client.get("/api/errors?limit=0"), 422, openapi)
    assert query["errors"][0]["field"].endswith("limit")
    small = make_client(DATA_DIR, max_body_bytes=4096)
    huge = dict(seed_records[SEED], id="00000000000000ff", documentation="x" * 5000)
    too_large = small.post("/api/errors", json=huge, headers=auth)
    assert _assert_problem(too_large, 413, openapi)["instance"] == "/api/errors"
