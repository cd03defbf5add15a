"""Messages rebuilt as a template and a pattern: literals, f-strings, `.format`, `%`,
concatenation, escaping, lists of pieces joined, and long messages cut to fit RE2."""

import re
from textwrap import dedent

import pytest
import re2

from app.harvest import SkipReason, extract_raises
from app.patterns import check_pattern
from tests.helpers.harvest import only_site as _only
from tests.helpers.harvest import template_of as _template


def test_implicit_concatenation_of_literals_gives_seed_001() -> None:
    site = _only(
        """
        if occupied_size_new > self.data_buffer_size:
            raise MemoryError(
                "Not enough space in the data buffer, "
                "try calling free_buf() to free up space"
            )
        """
    )
    assert site.message is not None
    assert site.line == 3  # the `raise` line, as seed 001 gives it
    assert site.error_class == "MemoryError"
    assert site.message.template == (
        "Not enough space in the data buffer, try calling free_buf() to free up space"
    )
    assert site.message.pattern == (  # seed 001's messagePattern, character for character
        r"Not enough space in the data buffer, try calling free_buf\(\) to free up space"
    )
    assert site.message.placeholders == ()


def test_fstring_split_over_lines_gives_seed_002() -> None:
    site = _only(
        """
        raise RuntimeError(
            "CUDA VMM pool has no occupied slice at control offset "
            f"{control_offset}"
        )
        """
    )
    assert site.message is not None
    assert site.message.template == (
        "CUDA VMM pool has no occupied slice at control offset {control_offset}"
    )
    assert site.message.pattern == (
        "CUDA VMM pool has no occupied slice at control offset (?P<control_offset>(?s:.+?))"
    )


def test_fstring_names_placeholders_after_expressions() -> None:
    template = _template(
        'raise ValueError(f"got {x:.2f} of {self.size!r} in {len(buffers)} at {shape[0]}, '
        'again {x} and {type(x).__name__}")'
    )
    assert template == (
        "got {x} of {size} in {len_buffers} at {shape_0}, again {x_2} and {type_x_name}"
    )


def test_format_method_positional_automatic_and_keyword_fields() -> None:
    assert _template('raise ValueError("got {} of {}".format(n, self.m))') == "got {n} of {m}"
    assert _template('raise ValueError("got {1} of {0}".format(n, m))') == "got {m} of {n}"
    assert _template('raise ValueError("bad {name!r:>10} {{x}}".format(name=v))') == (
        "bad {name} {x}"  # {{x}} is the literal text {x}
    )
    assert _template('raise ValueError("dtype {0.dtype}".format(t))') == "dtype {t_dtype}"


def test_percent_formatting_tuple_single_and_mapping() -> None:
    assert _template('raise ValueError("got %d of %.2f" % (n, ratio))') == "got {n} of {ratio}"
    assert _template('raise ValueError("got %s, 100%%" % value)') == "got {value}, 100%"
    assert _template('raise ValueError("key %(key)s missing" % locals())') == "key {key} missing"
    assert _only('raise ValueError("got %s and %s" % (a,))').skip == SkipReason.DYNAMIC_MESSAGE


def test_concatenation_makes_other_operands_placeholders() -> None:
    assert _template('raise KeyError("no key " + str(key) + " in store")') == (
        "no key {str_key} in store"
    )
    assert _template('raise KeyError("prefix: " + f"{a}" + "x {}".format(b))') == (
        "prefix: {a}x {b}"
    )


def test_conditional_expression_is_dynamic() -> None:
    site = _only('raise ValueError("too big" if n > 1 else "too small")')
    assert site.skip == SkipReason.DYNAMIC_MESSAGE


def test_newlines_and_metacharacters_are_escaped() -> None:
    site = _only(r'raise ValueError(f"bad [x] (y)?\n\tvalue: {v}.*")')
    assert site.message is not None
    assert site.message.pattern == r"bad \[x\] \(y\)\?\n\tvalue: (?P<v>(?s:.+?))\.\*"
    value = "1\n2"  # values may span lines, like a tensor's repr
    for engine in (re, re2):
        match = engine.fullmatch(site.message.pattern, f"bad [x] (y)?\n\tvalue: {value}.*")
        assert match
        assert match.group("v") == value


def test_a_message_joined_from_pieces_matches_any_of_them() -> None:
    """vLLM's lora/peft_helper.py appends a sentence per unsupported feature to a
    list (some of them in a method that returns it) and raises `" ".join(...)` of it. Any of
    them may come first, so nothing is in every message: each piece is a message of its own
    (the site's drafts), which is what a user with one unsupported feature sees."""
    (site,) = extract_raises(
        dedent(
            """
            class PEFTHelper:
                def _validate_features(self):
                    error_msg = []
                    if self.alora_invocation_tokens:
                        error_msg.append("vLLM does not support Activated LoRA (aLoRA).")
                    if self.use_qalora:
                        error_msg.append("vLLM does not support QALoRA.")
                    return error_msg

                def validate_legal(self, lora_config):
                    error_msg = self._validate_features()
                    max_rank = max([self.r, *self.rank_pattern.values()])
                    if max_rank > lora_config.max_lora_rank:
                        error_msg.append(
                            f"LoRA rank {max_rank} is greater than max_lora_rank"
                            f" {lora_config.max_lora_rank}."
                        )
                    if self.bias != "none":
                        error_msg.append("Adapter bias is not supported.")
                    if error_msg:
                        raise ValueError(f"{' '.join(error_msg)}")
            """
        )
    )
    assert site.message is not None, site.skip
    pieces = (site.message, *site.message.others)
    assert [piece.template for piece in pieces] == [
        "vLLM does not support Activated LoRA (aLoRA).",
        "vLLM does not support QALoRA.",
        "LoRA rank {max_rank} is greater than max_lora_rank {lora_config_max_lora_rank}.",
        "Adapter bias is not supported.",
    ]
    rank = pieces[2].pattern
    found = re2.fullmatch(rank, "LoRA rank 64 is greater than max_lora_rank 16.")
    assert found
    assert found["max_rank"] == "64"
    for piece in pieces:
        check_pattern(piece.pattern)


@pytest.mark.parametrize(
    ("source", "templates", "messages"),
    [
        (  # appended in a loop, joined with newlines after a heading
            """
            def check(fields):
                problems = []
                for name in fields:
                    problems.append(f"field {name} is not set")
                raise ValueError("invalid config:\\n" + "\\n".join(problems))
            """,
            ["invalid config:\nfield {name} is not set"],
            ["invalid config:\nfield a is not set"],
        ),
        (  # a list written out, extended under a condition: the first piece is always there
            """
            def check(x):
                parts = ["bad value", f"got {x!r}"]
                if x < 0:
                    parts.append("it must not be negative")
                raise ValueError(", ".join(parts))
            """,
            ["bad value, got {x}, it must not be negative"],
            ["bad value, got -1, it must not be negative", "bad value, got 3"],
        ),
    ],
    ids=["loop", "literal"],
)
def test_lists_of_pieces_built_in_a_loop_or_written_out(
    source: str, templates: list[str], messages: list[str]
) -> None:
    message = _only(source).message
    assert message is not None
    assert [piece.template for piece in (message, *message.others)] == templates
    for text in messages:
        assert re2.fullmatch(message.pattern, text), text


def test_a_list_used_as_a_message_or_changed_elsewhere_is_not_joined() -> None:
    assert (
        _only(
            """
        def f(parts):
            parts.append("not ours")
            raise ValueError(" ".join(parts))
        """
        ).skip
        == SkipReason.DYNAMIC_MESSAGE
    )
    assert (
        _only(
            """
        def f():
            parts = []
            parts.append("too many blocks")
            raise ValueError(f"{parts}")
        """
        ).skip
        == SkipReason.NO_LITERAL_TEXT
    )


def test_a_long_multi_line_message_keeps_its_first_line() -> None:
    """The first line names the error; the rest is captured, so the pattern stays
    within RE2's program limit."""
    lines = "\n".join(
        f"Tip {n}: read the documentation of the checkpoint module" for n in range(30)
    )
    source = f"def check():\n    raise CheckpointError(HEADER + {lines!r})\nHEADER = 'mismatch:\\n'"
    [site] = extract_raises(source)
    assert site.message.template == "mismatch:\n{details}"
    check_pattern(site.message.pattern)


def test_a_long_one_line_message_keeps_a_start_that_fits_the_program_limit() -> None:
    """SGLang's numa_utils asserts a one-line message of 900+ characters whose
    pattern compiles to 1,036 RE2 instructions; its start, cut after a word, names the
    error, and the rest is captured."""
    advice = " ".join(f"hint {n}: bind rank {n} to its own cores." for n in range(40))
    source = f'def check(world_size):\n    assert ok, f"{{world_size}} ranks, too many. {advice}"'
    [site] = extract_raises(source)
    assert site.message is not None
    assert site.message.template.startswith("{world_size} ranks, too many. hint 0:")
    assert site.message.template.endswith(" {details}")
    check_pattern(site.message.pattern)
    real = f"16 ranks, too many. {advice}"
    captured = re.fullmatch(site.message.pattern, real)
    assert captured is not None
    assert captured["world_size"] == "16"
    assert real.endswith(captured["details"])
