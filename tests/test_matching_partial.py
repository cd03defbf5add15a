"""Tests for app.matching.partial on templates harvested from vLLM 0.33.0's own
sampling_params.py: cut, wrapped and near copies of its real messages."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.harvest import extract_raises
from app.matching.partial import (
    MAX_NEAR_WORDS,
    MessageWords,
    Piece,
    _aligned,
    cut_match,
    may_be_near,
    near_match,
    pieces,
    unquoted,
    unwrapped,
)
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # downloads from the package index

MESSAGES = {
    "range": "temperature must be in [0, 2], got 5.0.",
    "finite": "temperature must be a finite number, got inf.",
    "diffusion": (
        "The temperature, min_p, seed, min_tokens, logit_bias, bad_words, and allowed_token_ids "
        "sampling parameters are not yet supported with diffusion models."
    ),
}


@pytest.fixture(scope="module")
def templates() -> dict[str, str]:
    """The patterns harvest makes of the raise sites that print MESSAGES."""
    path = Path(RELEASES.ensure_unpacked("vllm", "0.33.0")) / "vllm" / "sampling_params.py"
    sites = extract_raises(path.read_text(), "vllm/sampling_params.py")
    found = {}
    for name, message in MESSAGES.items():
        found[name] = next(
            site.message.pattern
            for site in sites
            if site.message and re.fullmatch(site.message.pattern, message)
        )
    return found


@pytest.mark.parametrize("keep", [24, 30, 36])
def test_a_message_cut_short_matches_what_is_there(templates: dict[str, str], keep: int) -> None:
    cut = MESSAGES["range"][:keep]
    found = cut_match(pieces(templates["range"]), cut)
    assert found is not None
    assert found.kind == "cut"
    assert found.cut_after == keep
    assert found.reason().startswith(f"message cut after {keep} characters")
    assert 0 < found.share < 1


def test_the_share_follows_what_is_left(templates: dict[str, str]) -> None:
    template = pieces(templates["diffusion"])
    shares = [cut_match(template, MESSAGES["diffusion"][:n]).share for n in (40, 80, 120)]
    assert shares == sorted(shares)
    assert shares[0] < 0.4 < shares[-1]


def test_a_cut_inside_a_value_captures_the_part_shown(templates: dict[str, str]) -> None:
    found = cut_match(pieces(templates["finite"]), "temperature must be a finite number, got in")
    assert found is not None
    assert found.captures == {"temperature": "in"}


@pytest.mark.parametrize(
    "text",
    [
        "temperature must be in [0, 3], got 5.0.",  # a literal differs: not a cut copy
        "top_p must be in (0, 1], got",
        "temperatu",  # too little to tell
    ],
)
def test_what_disagrees_is_no_cut(templates: dict[str, str], text: str) -> None:
    assert cut_match(pieces(templates["range"]), text) is None


def test_a_whole_message_is_no_cut(templates: dict[str, str]) -> None:
    assert cut_match(pieces(templates["range"]), MESSAGES["range"]) is None


def test_whitespace_and_quoting_are_a_near_match(templates: dict[str, str]) -> None:
    spaced = MESSAGES["diffusion"].replace(" ", "\n  ", 3).replace("The", "`The`")
    found = near_match(pieces(templates["diffusion"]), spaced)
    assert found is not None
    assert found.changed == 0
    assert found.reason() == (
        "near match: only whitespace, quoting or punctuation differ from the template"
    )


def test_one_or_two_words_are_a_near_match(templates: dict[str, str]) -> None:
    text = MESSAGES["diffusion"].replace("not yet", "not currently").replace("models", "LLMs")
    found = near_match(pieces(templates["diffusion"]), text)
    assert found is not None
    assert found.changed == MAX_NEAR_WORDS
    assert "'LLMs' where the template has 'models'" in found.reason()
    more = text.replace("sampling", "decoding")
    assert near_match(pieces(templates["diffusion"]), more) is None


def test_a_wrapped_message_joins_again() -> None:
    """Cut every 40 characters, inside words or at spaces (which the parser strips)."""
    message = MESSAGES["diffusion"]
    lines = [message[at : at + 40].rstrip() for at in range(0, len(message), 40)]
    assert message in unwrapped("\n".join(lines))
    assert unwrapped("one line") == []
    assert unwrapped("short\nlines") == []


def test_unquoted_reads_a_repr() -> None:
    assert unquoted("'max_model_len'") == "max_model_len"
    assert unquoted("plain") is None


def test_a_value_that_runs_into_other_words_is_no_cut() -> None:
    """https://github.com/xorbitsai/inference/issues/1715: an older release's message, cut
    after the start of its next sentence ("This ..."), against the current template, whose
    next sentence is another ("To allow ..."): the message shows the literal after the last
    value and then differs, so it is not a cut copy of this template; cut inside the value,
    or inside that literal, it still is."""
    template = pieces(
        r"User-specified max_model_len \((?P<max_model_len>(?s:.+?))\) is greater than the "
        r"derived max_model_len \((?P<max_len_key>(?s:.+?))=(?P<derived>(?s:.+?)) or "
        r"model_max_length=(?P<model_max_length>(?s:.+?)) in model's config\.json\)\. To allow "
        r"overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1\."
    )
    shown = (
        "User-specified max_model_len (4096) is greater than the derived max_model_len "
        "(seq_length=2048 or model_max_length=None in model's config.json). "
    )
    assert cut_match(template, shown + "This") is None
    assert cut_match(template, shown + "To all") is not None
    inside = cut_match(template, shown[: shown.index(" in model's")])
    assert inside is not None
    assert inside.captures["model_max_length"] == "None"


_WORDS = st.lists(st.sampled_from(["model", "length", "is", "not", "max", "tokens", "x1", "2"]))
_TEMPLATES = st.lists(
    st.lists(
        st.tuples(_WORDS, st.booleans()).map(
            lambda run: Piece(" ".join(run[0]), None, variable=run[1])
        ),
        min_size=1,
        max_size=5,
    ).map(tuple),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(templates=_TEMPLATES, message=_WORDS.map(" ".join))
def test_a_message_compared_with_many_templates_agrees_as_compared_alone(
    templates: list[tuple[Piece, ...]], message: str
) -> None:
    """One MessageWords reused for every template (difflib keeps what it learned of the
    message) finds what a fresh comparison of each finds."""
    words = MessageWords(message)
    assert [near_match(t, words) for t in templates] == [near_match(t, message) for t in templates]


@settings(max_examples=500, deadline=None)
@given(templates=_TEMPLATES, message=_WORDS.map(" ".join))
def test_the_words_in_common_never_rule_out_a_near_match(
    templates: list[tuple[Piece, ...]], message: str
) -> None:
    """The bound that spares most templates the alignment (the words the two have in
    common, counted) rules out none that the alignment finds near, and near_match finds
    what the alignment alone does."""
    words = MessageWords(message)
    for template in templates:
        aligned = _aligned(template, words)
        assert aligned is None or may_be_near(template, words)
        assert near_match(template, words) == aligned


def test_a_variable_part_of_a_few_characters_does_not_take_the_rest_of_a_cut_message() -> None:
    """data/'s cuBLAS handle record allows a quote or none around its call
    (`[`']?cublasCreate\\(handle\\)`): a message that names another call after "when calling"
    is not cut inside that quote, though it never shows the call's name; a message cut inside
    the call's name is."""
    template = pieces(
        r"CUDA error: (?P<status>CUBLAS_STATUS_[A-Z_]+) when calling "
        r"[`']?cublasCreate\(handle\)[`']?"
    )
    assert [piece.width for piece in template if piece.variable] == [None, 1, 1]
    other_call = (
        "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling cublasLtMatmul with "
        "transpose_mat1 t transpose_mat2 n m 9216 n 3398 k 7168 mat1_ld 7168 compute"
    )
    assert cut_match(template, other_call) is None
    found = cut_match(template, "CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCr")
    assert found is not None
    assert found.captures == {"status": "CUBLAS_STATUS_NOT_INITIALIZED"}
