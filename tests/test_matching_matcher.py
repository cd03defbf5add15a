"""The matcher's index follows the store's writes, is cached on disk for the next matcher,
leaves out a stored pattern it cannot take, and lets a match wait for its place only until
its deadline."""

import copy
import time

import pytest

from app.app_error import AppError
from app.matching.matcher import IndexBehind, Matcher
from app.matching.service import match_text, match_text_now
from app.records import service as records
from tests.helpers.matching import data_store, widget_record
from tests.helpers.real_errors import reproducer_traceback


@pytest.fixture
def store(settings):
    with data_store(settings) as opened:
        yield opened


def test_the_index_follows_writes(store) -> None:
    session, matcher = store
    line = "ValueError: flux capacitor overloaded at 88 mph"
    assert match_text(matcher, session, line).matches == []
    record = copy.deepcopy(records.get_record(session, "c53f6de81577a6bc").record.model_dump())
    record |= {
        "id": "00000000000000f1",
        "errorClass": "ValueError",
        "errorMessage": "flux capacitor overloaded at {speed} mph",
        "messagePattern": "flux capacitor overloaded at (.+?) mph",
    }
    records.write_records(session, [record])
    session.commit()
    [match] = match_text(matcher, session, line).matches
    assert match.id == "00000000000000f1"
    assert match.captures == {"speed": "88"}
    records.write_records(session, [record | {"messagePattern": "flux capacitor melted"}])
    session.commit()
    assert match_text(matcher, session, line).matches == []
    records.write_records(session, [record])
    session.commit()
    records.delete_record(session, "00000000000000f1")
    session.commit()
    assert match_text(matcher, session, line).matches == []


def test_a_match_that_may_not_wait_never_brings_the_index_up(store) -> None:
    """match_text_now (the event loop's) finds the index behind before any work, where
    match_text brings it up to the store's writes."""
    session, matcher = store
    line = reproducer_traceback("c53f6de81577a6bc")
    with pytest.raises(IndexBehind):
        match_text_now(matcher, session, line)  # nothing loaded yet
    assert match_text(matcher, session, line).matches[0].id == "c53f6de81577a6bc"
    assert match_text_now(matcher, session, line).matches[0].id == "c53f6de81577a6bc"
    records.delete_record(session, "c53f6de81577a6bc")
    session.commit()
    with pytest.raises(IndexBehind):
        match_text_now(matcher, session, line)
    assert [
        m.id for m in match_text(matcher, session, line).matches if m.id == "c53f6de81577a6bc"
    ] == []


def test_a_cached_index_is_reused_by_a_new_matcher(store) -> None:
    session, matcher = store
    line = reproducer_traceback("c53f6de81577a6bc")
    assert match_text(matcher, session, line).matches[0].id == "c53f6de81577a6bc"
    assert matcher._cache_path.exists()
    again = Matcher(session.get_bind(), matcher._cache_path.parent.parent, 1 << 20)
    assert match_text(again, session, line).matches[0].id == "c53f6de81577a6bc"


def test_a_stored_catch_all_pattern_is_left_out(store) -> None:
    """A pattern stored before its limit existed (straight into the store, past validation)
    must neither claim every paste nor stop the matcher."""
    session, matcher = store
    line = reproducer_traceback("c53f6de81577a6bc")
    assert match_text(matcher, session, line).matches[0].id == "c53f6de81577a6bc"
    records.write_records(session, [widget_record(session, "00000000000000c1", ".*")])
    session.commit()
    result = match_text(matcher, session, line)
    assert "00000000000000c1" not in {m.id for m in result.matches}
    assert result.matches[0].id == "c53f6de81577a6bc"


def test_a_match_waits_for_its_turn_within_its_deadline(store, tmp_path) -> None:
    session, _ = store
    line = reproducer_traceback("c53f6de81577a6bc")
    one = Matcher(session.get_bind(), tmp_path, 1 << 20, deadline_s=0.2, concurrency=1)
    with one.slot():  # another match is computing
        started = time.monotonic()
        with pytest.raises(AppError) as caught:
            match_text(one, session, line)
        assert time.monotonic() - started >= 0.2
    assert caught.value.status == 503
    assert match_text(one, session, line).matches[0].id == "c53f6de81577a6bc"  # its turn
