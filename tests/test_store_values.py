"""Values one engine keeps and another refuses: PostgreSQL holds no NUL character
in text and no integer beyond 32 bits in an INTEGER column. Such a request is never a 500,
and a record is stored whole or not at all."""

import pytest
from fastapi.testclient import TestClient

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
def test_a_nul_in_a_parameter_is_the_same_422_on_both_engines(
    client: TestClient, path: str
) -> None:
    """PostgreSQL cannot even look such a value up, and SQLite used to find nothing by it:
    both refuse it with its reason, before the store is asked."""
    response = client.get(path)
    assert response.status_code == 422, response.text
    if path.startswith("/api"):
        assert response.json()["title"] == "Invalid request"
        assert "NUL" in response.json()["detail"]


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
