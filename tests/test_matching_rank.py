"""A match's score is the sum of its named components, and every match result says which
ranking computed it: a reader can add a score up and see what to disagree with.

The pastes are offline copies of what people post: seed 002's SGLang traceback (its real
frames), the same error with another class, under a server's log, as a bare line, cut short,
and a log line that mentions a record without an exception around it.
"""

import math

import pytest
from fastapi.testclient import TestClient

from app.matching.rank import (
    CLASS_AGREES,
    CLASS_DIFFERS,
    FILE_IN_FRAMES,
    FILE_INNERMOST,
    FRAMES_MARGIN,
    FULL_MESSAGE,
    RANKING_VERSION,
    REVIEWED_BONUS,
    SAME_FUNCTION,
    SAME_LINE,
    Component,
    Match,
    _frames_first,
    total,
)

SEED_002 = "edc4df790b100979"
SEED_002_MESSAGE = "CUDA VMM pool has no occupied slice at control offset 4096"
SGLANG = "/sgl-workspace/sglang/python/sglang/srt"
SEED_002_TRACEBACK = f"""\
ERROR 08-28 05:02:11 [scheduler.py:2210] Scheduler hit an exception:
Traceback (most recent call last):
  File "{SGLANG}/managers/scheduler.py", line 2208, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "{SGLANG}/managers/mm_utils.py", line 412, in cancel_request_items
    pool.cancel_proxy(proxy)
  File "{SGLANG}/utils/cuda_vmm_transport_utils.py", line 545, in cancel_proxy
    self._cancel_control_offset(proxy.control_offset)
  File "{SGLANG}/utils/cuda_vmm_transport_utils.py", line 535, in _cancel_control_offset
    raise RuntimeError(
RuntimeError: {SEED_002_MESSAGE}
"""
PASTES = {
    "traceback": SEED_002_TRACEBACK,
    "other class": SEED_002_TRACEBACK.replace("RuntimeError: CUDA", "ValueError: CUDA"),
    "in a log": "INFO 08-28 05:02:10 [scheduler.py:1432] Prefill batch.\n"
    + SEED_002_TRACEBACK
    + "INFO 08-28 05:02:12 [scheduler.py:1511] Decode batch.\n",
    "bare line": f"RuntimeError: {SEED_002_MESSAGE}\n",
    "cut": f"RuntimeError: {SEED_002_MESSAGE[:40]}\n",
    "memory": "MemoryError: Not enough space in the data buffer, try calling free_buf() to "
    "free up space\n",
    "log line only": "WARNING 08-28 05:02:11 retrying: Not enough space in the data buffer, "
    "try calling free_buf() to free up space\n",
}


def _assert_adds_up(match: dict) -> None:
    """The match's components, as the API answers them, add up to its score."""
    assert match["components"], match["id"]
    for part in match["components"]:
        assert set(part) == {"id", "points", "hint"}
        assert part["id"]
        assert part["hint"]
    points = sum(part["points"] for part in match["components"])
    assert math.isclose(points, match["score"], abs_tol=1e-9), match
    assert match["reasons"]


@pytest.mark.parametrize("name", sorted(PASTES))
def test_every_score_is_the_sum_of_its_components(client: TestClient, name: str) -> None:
    response = client.post("/api/match", json={"text": PASTES[name]})
    assert response.status_code == 200
    body = response.json()
    assert body["rankingVersion"] == RANKING_VERSION
    assert body["matches"], name
    for match in body["matches"]:
        _assert_adds_up(match)


def test_the_batch_gives_each_result_its_ranking_version(client: TestClient) -> None:
    response = client.post("/api/match/batch", json={"texts": list(PASTES.values())})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [result["rankingVersion"] for result in results] == [RANKING_VERSION] * len(PASTES)
    for result in results:
        for match in result["matches"]:
            _assert_adds_up(match)


def test_the_components_name_what_agreed_with_the_weights_they_carry(client: TestClient) -> None:
    top = client.post("/api/match", json={"text": PASTES["traceback"]}).json()["matches"][0]
    assert top["id"] == SEED_002
    points = {part["id"]: part["points"] for part in top["components"]}
    assert points == {
        "message.full": FULL_MESSAGE,
        "class.agrees": CLASS_AGREES,
        "frames.file": FILE_IN_FRAMES,
        "frames.innermost": FILE_INNERMOST,
        "frames.line": SAME_LINE,
        "frames.function": SAME_FUNCTION,
        "repo.agrees": 5,
        "position.last": 4,
        "message.specificity": points["message.specificity"],
        "record.reviewed": REVIEWED_BONUS,
    }
    assert 0 < points["message.specificity"] <= 15
    hints = {part["id"]: part["hint"] for part in top["components"]}
    raised = "raised at python/sglang/srt/utils/cuda_vmm_transport_utils.py:535, the record's line"
    assert hints["frames.line"] == raised
    assert raised in top["reasons"]  # the text reasons say the same


def test_a_differing_class_is_a_negative_component(client: TestClient) -> None:
    top = client.post("/api/match", json={"text": PASTES["other class"]}).json()["matches"][0]
    assert top["id"] == SEED_002
    [differs] = [part for part in top["components"] if part["id"] == "class.differs"]
    assert differs["points"] == CLASS_DIFFERS
    assert differs["hint"] == "record raises RuntimeError, not ValueError"


def test_a_cut_message_and_a_log_line_are_named_for_what_they_are(client: TestClient) -> None:
    cut = client.post("/api/match", json={"text": PASTES["cut"]}).json()["matches"][0]
    assert cut["id"] == SEED_002
    assert cut["components"][0]["id"] == "message.cut"
    assert cut["components"][0]["hint"] == cut["reasons"][0]
    log = client.post("/api/match", json={"text": PASTES["log line only"]}).json()["matches"][0]
    assert log["components"][0]["id"] == "message.in-log-line"


def test_a_score_lowered_below_the_frames_records_still_adds_up() -> None:
    """A record from no frame's file that outscores one from a frame's file is put below it;
    the points it loses are a component of their own."""
    hint = "pattern matches the whole exception message"
    in_frames = Match("a" * 16, 0.0, 0, {}, components=[Component("message.full", 40, hint)])
    in_frames.score, in_frames.in_frames = total(in_frames.components), True
    parts = [Component("message.full", 40, hint), Component("record.reviewed", 7, "reviewed")]
    elsewhere = Match("b" * 16, total(parts), 0, {}, components=parts)
    _frames_first([in_frames, elsewhere])
    assert elsewhere.score == 40 - FRAMES_MARGIN
    assert elsewhere.components[-1].id == "rank.below-frames"
    assert elsewhere.components[-1].points == -7 - FRAMES_MARGIN
    assert elsewhere.score == total(elsewhere.components)
    assert elsewhere.reasons[-1] == elsewhere.components[-1].hint


def test_the_match_page_shows_how_the_score_adds_up(client: TestClient) -> None:
    page = client.post("/match", data={"text": PASTES["traceback"]})
    assert page.status_code == 200
    assert "How the score adds up" in page.text
    assert "<code>frames.innermost</code>" in page.text
    assert f"ranking {RANKING_VERSION}" in page.text


def test_openapi_documents_the_components_and_the_ranking_version(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert "rankingVersion" in schemas["MatchResult"]["required"]
    components = schemas["MatchOut"]["properties"]["components"]
    assert components["items"] == {"$ref": "#/components/schemas/ScoreComponent"}
    assert "components" in schemas["MatchOut"]["required"]
    assert set(schemas["ScoreComponent"]["required"]) == {"id", "points", "hint"}
    batch = schemas["BatchResult"]["properties"]["results"]["items"]
    assert batch == {"$ref": "#/components/schemas/MatchResult"}
