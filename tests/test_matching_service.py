"""match_text on real tracebacks: the seed errors from the real upstream code, ordinary
Python errors, and each under the log noise that real servers add."""

import copy
import gc
import time

import pytest

from app.app_error import AppError
from app.matching.matcher import Matcher
from app.matching.score_weights import RANKING_VERSION
from app.matching.service import DEADLINE_RETRY_AFTER_S, match_text, match_texts
from app.records import service as records
from app.wire.matching import MatchResult
from tests.helpers.matching import data_store
from tests.helpers.real_errors import (
    SEED_CLASSES,
    SEED_TRACEBACKS,
    noise_variants,
    program_traceback,
    reproducer_traceback,
)


@pytest.fixture
def store(settings):
    with data_store(settings) as opened:
        yield opened


@pytest.mark.parametrize("record_id", sorted(SEED_TRACEBACKS))
def test_seed_errors_match_under_every_kind_of_noise(store, tmp_path, record_id) -> None:
    session, matcher = store
    other, _ = program_traceback(tmp_path)
    real = SEED_TRACEBACKS[record_id]()
    for name, text in noise_variants(real, other).items():
        result = match_text(matcher, session, text)
        assert result.matches, name
        top = result.matches[0]
        assert top.id == record_id, (name, [(m.id, m.score, m.reasons) for m in result.matches])
        matched = result.exceptions[top.exception_index]
        assert matched.error_class == SEED_CLASSES[record_id], name
        start, end = matched.message_spans[0]
        assert text[start:end] == matched.message.split("\n")[0], name
        if record_id == "edc4df790b100979":
            assert top.captures == {"control_offset": "4096"}, name


def test_frames_in_the_records_file_decide_between_equal_messages(store, tmp_path) -> None:
    session, matcher = store
    text, path = program_traceback(tmp_path)
    base = copy.deepcopy(records.get_record(session, "c53f6de81577a6bc").record.model_dump())
    common = {
        "errorMessage": "no widget named {name} in registry",
        "messagePattern": "no widget named (?P<name>.+?) in registry",
        "errorClass": "WidgetError",
        "sourceCode": None,
        "sourceCodeStart": None,
        "sourceCodeEnd": None,
        "repo": "example/widgets",
    }
    elsewhere = base | common | {"id": "00000000000000e1", "filePath": "other/place.py"}
    here = (
        base
        | common
        | {"id": "00000000000000e2", "filePath": "widgets/registry.py", "lineNumber": 17}
    )
    records.write_records(session, [elsewhere, here])
    session.commit()
    result = match_text(matcher, session, text)
    assert [m.id for m in result.matches[:2]] == ["00000000000000e2", "00000000000000e1"]
    top = result.matches[0]
    assert top.captures == {"name": "'sprocket'"} or top.captures == {"name": "sprocket"}
    assert any("widgets/registry.py" in reason for reason in top.reasons)
    key_error, widget_error = result.exceptions
    assert (key_error.error_class, widget_error.error_class) == ("KeyError", "WidgetError")
    assert widget_error.cause_index == 0
    assert widget_error.qualified_class == "WidgetError"
    assert str(path) in [frame.file for frame in widget_error.frames][-2:][0] or any(
        frame.file == str(path) for frame in widget_error.frames
    )


def test_a_match_shows_the_record_as_last_written(store) -> None:
    """What a match shows of a record is kept per dataset version: a write shows at once."""
    session, matcher = store
    line = reproducer_traceback("c53f6de81577a6bc")
    [first, *_] = match_text(matcher, session, line).matches
    assert first.id == "c53f6de81577a6bc"
    record = records.get_record(session, first.id).record.model_dump()
    assert "kept-per-version" not in record["tags"]
    records.write_records(session, [record | {"tags": [*record["tags"], "kept-per-version"]}])
    session.commit()
    [again, *_] = match_text(matcher, session, line).matches
    assert again.id == first.id
    assert "kept-per-version" in again.record.tags
    assert again.record.tags != first.record.tags


def test_an_oversized_paste_is_413(store) -> None:
    session, matcher = store
    with pytest.raises(AppError) as caught:
        match_text(matcher, session, "x" * (1 << 20 + 1))
    assert caught.value.status == 413


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_blank_text_matches_nothing(store, text) -> None:
    session, matcher = store
    assert match_text(matcher, session, text) == MatchResult(
        exceptions=[], matches=[], truncated=False, ranking_version=RANKING_VERSION
    )


def test_noise_hits_rank_below_message_hits(store) -> None:
    session, matcher = store
    text = (
        'File "/srv/app/free.py", line 3, in f\n'
        "    log('Attempted to free more buffers than allocated')\n"
        "RuntimeError: CUDA VMM pool has no occupied slice at control offset 12\n"
    )
    result = match_text(matcher, session, text)
    assert result.matches[0].id == "edc4df790b100979"


def _record_like(session, **fields) -> dict:
    base = copy.deepcopy(records.get_record(session, "c53f6de81577a6bc").record.model_dump())
    return base | {"sourceCode": None, "sourceCodeStart": None, "sourceCodeEnd": None} | fields


def test_a_dynamic_message_is_found_by_its_raise_site(store, tmp_path) -> None:
    """A draft whose message is built at run time is matched by where it raises."""
    session, matcher = store
    text, _ = program_traceback(tmp_path)
    located = _record_like(
        session,
        id="00000000000000d1",
        repo="example/widgets",
        errorClass="WidgetError",
        errorMessage="{msg}",
        messagePattern="(?P<msg>(?s:.+?))",
        filePath="widgets/registry.py",
        lineNumber=17,
    )
    records.write_records(session, [located], review_state=records.DRAFT)
    session.commit()
    top = match_text(matcher, session, text).matches[0]
    assert top.id == "00000000000000d1"
    assert top.reasons[0] == "raised at the record's site, whose message is built at run time"
    assert top.captures == {"msg": "no widget named sprocket in registry"}
    assert "00000000000000d1" not in matcher.index(session), "never matched by its text"
    assert match_text(matcher, session, "WidgetError: anything at all").matches == []


def test_little_literal_text_needs_frames_in_the_records_file(store) -> None:
    session, matcher = store
    vague = _record_like(
        session,
        id="00000000000000d2",
        repo="example/widgets",
        errorClass="TypeError",
        errorMessage="{layout} tensor",
        messagePattern="(?P<layout>(?s:.+?)) tensor",
        filePath="widgets/layouts.py",
        lineNumber=3,
    )
    records.write_records(session, [vague], review_state=records.DRAFT)
    session.commit()
    assert match_text(matcher, session, "TypeError: sparse tensor").matches == []
    framed = (
        "Traceback (most recent call last):\n"
        '  File "/srv/widgets/layouts.py", line 3, in convert\n'
        "TypeError: sparse tensor\n"
    )
    assert match_text(matcher, session, framed).matches[0].id == "00000000000000d2"


# --- hostile pastes and patterns ----------------------------------------------------


def test_a_batch_is_limited_like_one_paste(store) -> None:
    session, matcher = store
    half = "ValueError: x\n" * ((1 << 20) // 28 + 1)
    with pytest.raises(AppError) as caught:
        match_texts(matcher, session, [half, half])
    assert caught.value.status == 413
    assert len(match_texts(matcher, session, [half])) == 1


def test_a_match_past_its_deadline_stops_with_a_503(store, tmp_path) -> None:
    """The work stops, not only the reply: against the time the whole match takes here,
    a deadline of a tenth of it ends the request well before. Every stage checks, the last
    ones (near matches of each exception) too. The garbage collector is held off while
    timing: a collection of the whole test session's heap, landing between two checks, is
    not the match's work."""
    session, matcher = store
    paste = "ValueError: bad value\n" * 40_000
    matcher.index(session)  # loading the index is not the request's work
    slow = Matcher(session.get_bind(), tmp_path, 1 << 20)
    slow.index(session)
    gc.collect()
    gc.disable()
    try:
        started = time.monotonic()
        match_text(matcher, session, paste)
        whole = time.monotonic() - started
        slow.deadline_s = whole / 10
        started = time.monotonic()
        with pytest.raises(AppError) as caught:
            match_text(slow, session, paste)
        stopped_after = time.monotonic() - started
    finally:
        gc.enable()
    assert stopped_after < whole / 2
    assert caught.value.status == 503
    assert caught.value.retry_after_s == DEADLINE_RETRY_AFTER_S
    assert "ERRKB_MATCH_DEADLINE_S" in caught.value.detail
