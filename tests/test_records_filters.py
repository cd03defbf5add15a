"""One RecordFilters for every listing: the same query parameters, meaning and 4xx
on /api/errors, /api/search, /api/curation/queue and their pages, one option each in the
CLI, and one SQL condition behind all of them."""

import pytest
from fastapi.testclient import TestClient

from app.records.filters import (
    MAX_REPO_CHARS,
    MAX_TAG_CHARS,
    NO_FILTERS,
    RecordFilters,
    record_condition,
)
from tests.helpers.records import SEED_002, SEED_002_ERROR

FILTERS = [
    {"repo": "vllm-project/vllm"},
    {"repo": "sgl-project/sglang"},
    {"errorClass": "MemoryError"},
    {"errorType": "exception"},
    {"severity": "warning"},
    {"tag": "double-free"},
    {"handlingStrategy": "validation"},
    {"reviewState": "draft"},
    {"reviewState": "reviewed"},
    {"modifiedSince": "2999-01-01T00:00:00"},
    {"modifiedSince": "2000-01-01T00:00:00+02:00"},
    {"tag": "double-free", "repo": "vllm-project/vllm"},
]
LISTINGS = ("/api/errors", "/api/search", "/api/curation/queue", "/search", "/curate")


PAGE = 100  # the most a search answers at once: every record of the fixture's store


def _ids(client: TestClient, path: str, **params: str) -> set[str]:
    response = client.get(path, params={"limit": PAGE, **params})
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert len(items) < PAGE, "the store outgrew one page: the sets would be cut"
    return {item["id"] if "id" in item else item["record"]["id"] for item in items}


def test_every_filter_param_is_a_field() -> None:
    names = {field.alias for field in RecordFilters.model_fields.values()}
    assert {name for params in FILTERS for name in params} == names


def test_no_filter_is_no_condition() -> None:
    assert record_condition(NO_FILTERS) is None
    assert record_condition(RecordFilters(repo="a/b")) is not None


@pytest.mark.parametrize("params", FILTERS)
def test_listing_and_search_filter_alike(client: TestClient, params: dict) -> None:
    """The list, the recent records (empty query) and a full-text search keep the same records
    for the same filters: one condition behind all three."""
    listed = _ids(client, "/api/errors", **params)
    assert _ids(client, "/api/search", q="", **params) == listed
    for word in ("memory", "free"):
        assert (
            _ids(client, "/api/search", q=word, **params)
            == _ids(client, "/api/search", q=word) & listed
        )


def test_the_matcher_boost_obeys_every_filter(client: TestClient) -> None:
    assert SEED_002 in _ids(client, "/api/search", q=SEED_002_ERROR)
    for params in ({"severity": "warning"}, {"handlingStrategy": "retry"}, {"repo": "a/b"}):
        assert SEED_002 not in _ids(client, "/api/search", q=SEED_002_ERROR, **params)


@pytest.mark.parametrize("path", LISTINGS)
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"repo": "x" * (MAX_REPO_CHARS + 1)}, "repo"),
        ({"tag": "t" * (MAX_TAG_CHARS + 1)}, "tag"),
        ({"severity": "s" * 65}, "severity"),
        ({"modifiedSince": "yesterday"}, "modifiedSince"),
        # PostgreSQL cannot compare with a NUL (it answered 422 where SQLite found nothing)
        ({"repo": "a/b\x00"}, "repo"),
        ({"errorClass": "\x00"}, "errorClass"),
        ({"tag": "x\x00y"}, "tag"),
        ({"reviewState": "draft\x00"}, "reviewState"),
    ],
)
def test_bad_filters_are_4xx_naming_the_parameter(
    client: TestClient, path: str, params: dict, field: str
) -> None:
    response = client.get(path, params=params)
    assert response.status_code == 422
    assert field in response.text
    if path.startswith("/api"):
        assert response.json()["title"] == "Invalid request"


def test_pages_take_every_filter(client: TestClient) -> None:
    page = client.get(
        "/search", params={"q": "free", "severity": "error", "reviewState": "reviewed"}
    )
    assert page.status_code == 200
    assert "severity: <strong>error</strong>" in page.text
    assert page.headers["link"].startswith(
        "</api/search?q=free&severity=error&reviewState=reviewed>"
    )
    curate = client.get("/curate", params={"errorClass": "MemoryError", "repo": ""})
    assert curate.status_code == 200
    assert 'href="/api/curation/queue?errorClass=MemoryError"' in curate.text


@pytest.mark.parametrize("path", ["/api/errors", "/api/search", "/api/curation/queue"])
def test_openapi_documents_each_filter(client: TestClient, path: str) -> None:
    parameters = client.get("/openapi.json").json()["paths"][path]["get"]["parameters"]
    described = {p["name"]: p.get("description") for p in parameters if p["in"] == "query"}
    for field in RecordFilters.model_fields.values():
        assert described[field.alias], field.alias


def test_a_nul_in_a_filter_is_a_clear_422_and_openapi_says_so(client: TestClient) -> None:
    """The same answer on both engines (this runs once per engine), and the reason."""
    for path in LISTINGS:
        response = client.get(path, params={"repo": "a\x00b"})
        assert response.status_code == 422, path
        if path.startswith("/api"):
            assert response.json()["errors"] == [
                {
                    "field": "query.repo",
                    "reason": "Value error, must not contain a NUL character (U+0000)",
                }
            ]
    parameters = client.get("/openapi.json").json()["paths"]["/api/errors"]["get"]["parameters"]
    schemas = {p["name"]: p["schema"] for p in parameters}
    for field in ("repo", "errorClass", "tag", "reviewState", "severity"):
        assert schemas[field]["pattern"] == "^[^\\x00]*$", field
