"""Text no reply can encode or no engine can store (a lone surrogate, a NUL) is refused where
it enters, as a problem, and never costs another request its answer or its hit."""

import json

import pytest
from sqlalchemy import text

from app.app_error import PROBLEM_MEDIA
from app.curation.hits import RECORD
from tests.helpers.records import DATA_DIR

SEED = "c53f6de81577a6bc"
BAD_STRINGS = ["ValueError: a \\ud800 b", "ValueError: a \\udfff", "ValueError: a \\u0000 b"]
JSON = {"content-type": "application/json"}


def _refused(response) -> None:
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == PROBLEM_MEDIA
    assert "NUL character" in response.json()["detail"] or "surrogate" in response.json()["detail"]


@pytest.mark.parametrize("bad", BAD_STRINGS)
def test_match_and_batch_refuse_bad_text_and_keep_other_hits(make_client, bad) -> None:
    client = make_client(DATA_DIR)
    client.get(f"/errors/{SEED}")  # another user's hit, pending when the bad paste comes
    _refused(client.post("/api/match", content=f'{{"text": "{bad}"}}', headers=JSON))
    batch = f'{{"texts": ["ValueError: fine", "{bad}"]}}'
    _refused(client.post("/api/match/batch", content=batch, headers=JSON))
    _refused(client.post("/api/match", content=f'{{"text": "x", "{bad}": 1}}', headers=JSON))
    assert client.post("/api/match", json={"text": "KeyError: 'x'"}).status_code == 200
    client.app.state.services.hits.flush()
    items = client.get("/api/curation/queue").json()["items"]
    assert client.get("/api/curation/queue").status_code == 200
    assert [item["template"] for item in items if item["template"]] == ["KeyError: <str>"]
    with client.app.state.services.engine.connect() as connection:
        hits = connection.execute(
            text("SELECT count FROM hits WHERE kind = :kind AND subject = :id"),
            {"kind": RECORD, "id": SEED},
        ).scalar_one()
    assert hits == 1


@pytest.mark.parametrize("bad", BAD_STRINGS)
def test_record_writes_refuse_bad_text(client, seed_records, auth, bad) -> None:
    record = seed_records[SEED] | {"id": "00000000000000fe"}
    body = json.dumps(record).replace('"errorMessage": "', f'"errorMessage": "{bad} ', 1)
    headers = auth | JSON
    _refused(client.post("/api/errors", content=body, headers=headers))
    _refused(client.put("/api/errors/00000000000000fe", content=body, headers=headers))
    assert client.get("/api/errors/00000000000000fe").status_code == 404


def test_nul_in_plain_text_and_form_pastes_is_matched_and_never_stored(make_client) -> None:
    client = make_client()
    paste = "ValueError: a \x00 b\x00c"
    plain = {"content-type": "text/plain"}
    assert client.post("/api/match", content=paste.encode(), headers=plain).status_code == 200
    assert client.post("/match", data={"text": paste, "mode": "match"}).status_code == 200
    client.app.state.services.hits.flush()
    [item] = client.get("/api/curation/queue").json()["items"]
    assert item["template"] == "ValueError: a <value>"  # a run of values is one
    assert item["hits"] == 2
