"""Values one engine keeps and another refuses: PostgreSQL holds no NUL character
in text and no integer beyond 32 bits in an INTEGER column. Such a request is never a 500,
and a record is stored whole or not at all."""

import pytest
from fastapi.testclient import TestClient

from tests.helpers.postgres import POSTGRESQL
from tests.helpers.records import make_record


@pytest.mark.parametrize(
    "path", ["/api/errors/a%00b", "/api/errors/by-slug/a%00/b/c", "/errors/%00"]
)
def test_a_key_with_a_nul_names_no_record(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 404


@pytest.mark.parametrize(
    "path",
    ["/api/errors?repo=a%00b", "/api/search?q=free&repo=a%00b", "/search?q=free&tag=%00"],
)
def test_a_nul_in_a_parameter_is_never_a_server_error(
    client: TestClient, store_engine: str, path: str
) -> None:
    """SQLite finds nothing by such a value; PostgreSQL cannot look it up: a 422 problem."""
    response = client.get(path)
    assert response.status_code < 500, response.text
    if store_engine == POSTGRESQL:
        assert response.status_code == 422
        if path.startswith("/api"):
            assert response.json()["title"] == "Invalid value"


@pytest.mark.parametrize(
    "fields",
    [{"errorMessage": "Tapir\x00failed"}, {"lineNumber": 2**40}],
)
def test_a_record_the_store_cannot_hold_is_refused_whole(
    client: TestClient, auth: dict, fields: dict
) -> None:
    record = make_record(77, "Tapir failed") | fields
    response = client.post("/api/errors", json=record, headers=auth)
    assert response.status_code in (201, 422), response.text
    stored = client.get(f"/api/errors/{record['id']}")
    assert stored.status_code == (200 if response.status_code == 201 else 404)
