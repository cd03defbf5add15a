"""Tests for app.matching.deadline: the limit of one match request, and that every stage of
the pipeline stops at it."""

import time

import pytest

from app.matching import deadline
from app.matching.deadline import DeadlineExceeded, OverBudget, budget, within
from app.matching.index import PatternIndex
from app.matching.logtext import clean_lines
from app.matching.partial import second_chance
from app.matching.tracebacks.parse import parse_exceptions
from tests.helpers.index import BACKENDS

LINES = "\n".join(f"ValueError: bad value {n}" for n in range(5000))


def test_no_limit_never_stops() -> None:
    deadline.check()
    with within(None):
        time.sleep(1e-3)
        deadline.check()


def test_a_passed_limit_raises_with_its_seconds() -> None:
    with within(0.001):
        time.sleep(0.01)
        with pytest.raises(DeadlineExceeded) as raised:
            deadline.check()
    assert raised.value.seconds == 0.001
    assert "0.001 s" in str(raised.value)
    deadline.check()  # the limit ends with its block


def test_an_inner_limit_cannot_extend_an_outer_one() -> None:
    with within(0.001), within(60.0):
        time.sleep(0.01)
        with pytest.raises(DeadlineExceeded):
            deadline.check()


def test_an_inner_limit_may_shorten_an_outer_one() -> None:
    with within(60.0):
        with within(0.001):
            time.sleep(0.01)
            with pytest.raises(DeadlineExceeded):
                deadline.check()
        deadline.check()


def spend_cpu(seconds: float) -> None:
    """Keep this thread busy for `seconds` of its CPU time."""
    ends = time.thread_time() + seconds
    while time.thread_time() < ends:
        pass


def test_a_spent_budget_raises_over_budget_not_the_deadline() -> None:
    """The budget is the caller's, not the client's limit: a match under a long deadline
    that runs past its budget says so with its own exception, which match_text lets by."""
    with within(60.0), budget(0.001):
        deadline.check()
        time.sleep(0.01)
        deadline.check()  # a wait is no work: the budget is CPU time
        spend_cpu(0.002)
        with pytest.raises(OverBudget):
            deadline.check()
        with pytest.raises(OverBudget):
            clean_lines(LINES)
    deadline.check()  # the budget ends with its block
    assert len(clean_lines(LINES)) == 5000


def test_cleaning_lines_stops_at_the_limit() -> None:
    with within(1e-6):
        time.sleep(1e-3)
        with pytest.raises(DeadlineExceeded):
            clean_lines(LINES)
    assert len(clean_lines(LINES)) == 5000


def test_a_flood_of_carriage_returns_stops_too() -> None:
    with within(1e-6):
        time.sleep(1e-3)
        with pytest.raises(DeadlineExceeded):
            clean_lines("x\r" * 5000)


def test_parsing_stops_at_the_limit() -> None:
    lines = clean_lines(LINES)
    with within(1e-6):
        time.sleep(1e-3)
        with pytest.raises(DeadlineExceeded):
            parse_exceptions(LINES, lines)
    assert len(parse_exceptions(LINES, lines)) == 5000


def test_near_matches_stop_at_the_limit() -> None:
    """The last stage too: each exception no pattern matched whole is compared with up to
    MAX_CANDIDATES templates, which on a paste of thousands of exceptions is most of the
    match."""
    paste = "\n".join(f"ValueError: the value {n} given to the layer is bad" for n in range(500))
    exceptions = parse_exceptions(paste)
    index = PatternIndex([("bad-value", r"the value (\d+) given to this layer is bad")])
    assert len(second_chance(index, exceptions, [], len(paste))) == 500
    with within(1e-6):
        time.sleep(1e-3)
        with pytest.raises(DeadlineExceeded):
            second_chance(index, exceptions, [], len(paste))


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_index_scan_and_its_pattern_calls_stop_at_the_limit(backend: str) -> None:
    index = PatternIndex([("bad-value", r"bad value (\d+)")], backend=backend)
    with within(1e-6):
        time.sleep(1e-3)
        with pytest.raises(DeadlineExceeded):
            index.candidates(LINES)
        with pytest.raises(DeadlineExceeded):
            index.match("bad-value", "bad value 7")
    assert len(index.candidates(LINES)) == 20  # MAX_HITS_PER_KEY
    assert index.match("bad-value", "bad value 7").groups == ("7",)
