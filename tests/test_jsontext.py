"""Tests for app.jsontext: hostile JSON becomes a reason with a position, never a crash."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.jsontext import MAX_JSON_DEPTH, JsonTextError, parse_json, unfit_text


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_parses() -> None:
    value = parse_json(_nested(MAX_JSON_DEPTH))
    for _ in range(MAX_JSON_DEPTH - 1):
        value = value[0]
    assert value == []


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 1000, 100_000])
def test_deeper_nesting_is_refused(depth: int) -> None:
    with pytest.raises(JsonTextError, match=f"nested deeper than {MAX_JSON_DEPTH}"):
        parse_json(_nested(depth))


def test_objects_count_as_nesting_too() -> None:
    text = '{"a": ' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(JsonTextError, match="nested deeper"):
        parse_json(text)


def test_an_integer_of_5000_digits_is_refused() -> None:
    with pytest.raises(JsonTextError, match="more than 4300 digits"):
        parse_json('{"lineNumber": ' + "9" * 5000 + "}")


def test_syntax_errors_say_where() -> None:
    with pytest.raises(JsonTextError) as raised:
        parse_json('{\n  "id": 1,\n  oops\n}')
    assert (raised.value.line, raised.value.column) == (3, 3)
    assert "at line 3 column 3" in str(raised.value)


def test_scalars_and_wide_values_parse() -> None:
    assert parse_json('"text"') == "text"
    assert parse_json("[" + ",".join(["[1]"] * 10_000) + "]")[-1] == [1]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"text": "a \\ud800 b"}', "a lone surrogate (U+D800) at offset 2"),
        ('["ok", {"k\\udfff": 1}]', "a lone surrogate (U+DFFF) at offset 1"),
        ('{"text": "a\\u0000"}', "a NUL character (U+0000) at offset 1"),
    ],
)
def test_strings_no_reply_can_encode_or_store_are_refused(text: str, reason: str) -> None:
    with pytest.raises(JsonTextError) as refused:
        parse_json(text)
    assert str(refused.value) == f"a string holds {reason}"


def test_a_surrogate_pair_is_one_character_and_parses() -> None:
    assert parse_json('"\\ud83d\\ude00"') == "\U0001f600"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", " ", "é", "日", "\x00", "\ud800", "\udfff", "😀"])))
def test_unfit_text_finds_what_the_regex_alone_finds(text: str) -> None:
    """The quick checks before the regex change no answer: the first NUL or lone surrogate,
    where it is, or None."""
    found = re.search("[\x00\ud800-\udfff]", text)
    if found is None:
        assert unfit_text(text) is None
    else:
        reason = unfit_text(text)
        assert reason is not None
        assert reason.endswith(f"at offset {found.start()}")
