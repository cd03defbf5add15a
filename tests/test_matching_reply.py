"""A reply is capped, and says so: the exceptions, their frames and messages, and the
captured values."""

import pytest

from app.matching.reply import MAX_CAPTURE_CHARS, MAX_EXCEPTIONS, MAX_FRAMES, MAX_MESSAGE_CHARS
from app.matching.service import match_text
from app.records import service as records
from tests.helpers.matching import data_store, widget_record
from tests.helpers.real_errors import reproducer_traceback


@pytest.fixture
def store(settings):
    with data_store(settings) as opened:
        yield opened


def test_replies_are_capped_and_say_so(store) -> None:
    session, matcher = store
    many = "\n".join(f"ValueError: bad value {n}" for n in range(MAX_EXCEPTIONS + 50))
    result = match_text(matcher, session, many)
    assert len(result.exceptions) == MAX_EXCEPTIONS
    assert result.truncated
    assert [e.index for e in result.exceptions] == list(range(MAX_EXCEPTIONS))

    frames = "".join(f'  File "/srv/f{n}.py", line {n}, in f{n}\n    f()\n' for n in range(150))
    deep = f"Traceback (most recent call last):\n{frames}RuntimeError: {'x' * 5000}\n"
    [exception] = match_text(matcher, session, deep).exceptions
    assert len(exception.frames) == MAX_FRAMES
    assert exception.frames[-1].file == "/srv/f149.py"  # the innermost are kept
    assert len(exception.message) == MAX_MESSAGE_CHARS

    records.write_records(
        session, [widget_record(session, "00000000000000c2", r"widget (?P<name>\w+) exploded")]
    )
    session.commit()
    capture = match_text(matcher, session, f"ValueError: widget {'w' * 1000} exploded")
    [match] = capture.matches
    assert match.captures == {"name": "w" * MAX_CAPTURE_CHARS}
    assert capture.truncated

    small = match_text(matcher, session, reproducer_traceback("c53f6de81577a6bc"))
    assert not small.truncated
