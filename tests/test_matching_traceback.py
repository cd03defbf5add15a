"""Tests for app.matching.tracebacks on tracebacks produced by running real code.

No traceback here is typed by hand: a module-scoped fixture writes a small package tree
(including stand-ins for ``torch`` and ``vllm.v1.engine.exceptions``, so the printed names are
module-qualified as Python prints them) and runs code that raises in a subprocess, capturing
``traceback.format_exc()``. The tests then wrap that output in the log noise seen in practice.
"""

import gc
import json
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import timedelta
from itertools import zip_longest
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.matching.logtext import clean_lines
from app.matching.tracebacks.model import Frame, ParsedException
from app.matching.tracebacks.parse import parse_exceptions
from app.matching.tracebacks.rows import every_row
from app.matching.tracebacks.stream import parse_lines, parse_stream
from tests.helpers.hostile import pastes as hostile_pastes
from tests.helpers.pastes import TRANSFORMS
from tests.helpers.real_pastes import load_cases

SAMPLES = '''
"""Code that fails the way serving stacks do; each function name is one scenario."""
import json
import sys
import traceback

import torch
from vllm.v1.engine.exceptions import EngineDeadError


def load(config, key):
    return config[key]


def lookup(config):
    return load(config, "max_model_len")


def start():
    return lookup({"model": "facebook/opt-125m"})


def nested_keyerror():
    start()


def direct_cause():
    try:
        start()
    except KeyError as error:
        raise RuntimeError("Engine core initialization failed.") from error


def context():
    try:
        start()
    except KeyError:
        return 1 / 0


def no_message():
    raise KeyboardInterrupt


def stop_iteration():
    next(iter(()))


def multiline():
    raise ValueError("first line\\nsecond line\\n  indented third")


def recurse(depth):
    return recurse(depth + 1)


def recursion():
    recurse(0)


def qualified():
    raise EngineDeadError("EngineCore encountered an issue. See stack trace for the root cause.")


def out_of_memory():
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB.")


def syntax_error():
    compile("engine = start(\\n", "config_loader.py", "exec")


def ray_task_error():
    error_class = type("RayTaskError(ValueError)", (ValueError,), {"__module__": "ray.exceptions"})
    raise error_class("ray::RayWorkerWrapper.execute_method() (pid=5678, ip=10.0.0.7)")


def group():
    raise ExceptionGroup("workers failed", [ValueError("rank 0"), TypeError("rank 1")])


SCENARIOS = [nested_keyerror, direct_cause, context, no_message, stop_iteration, multiline,
             recursion, qualified, out_of_memory, syntax_error, ray_task_error, group]

if __name__ == "__main__":
    captured = {}
    for scenario in SCENARIOS:
        try:
            scenario()
        except BaseException:
            captured[scenario.__name__] = traceback.format_exc()
    json.dump(captured, sys.stdout)
'''

PACKAGES = {
    "torch/__init__.py": "class OutOfMemoryError(RuntimeError):\n    pass\n",
    "vllm/__init__.py": "",
    "vllm/v1/__init__.py": "",
    "vllm/v1/engine/__init__.py": "",
    "vllm/v1/engine/exceptions.py": "class EngineDeadError(Exception):\n    pass\n",
    "samples.py": SAMPLES,
}

PYTEST_FAILURE = """
def test_boom():
    x = {"a": 1}
    raise ValueError(f"boom {x}\\nsecond line")
"""

VLLM_PREFIX = "(EngineCore_DP0 pid=1234) ERROR 08-14 12:00:01 [core.py:710] "


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Scenario name -> the traceback Python printed for it, plus the uncaught form."""
    root = tmp_path_factory.mktemp("real")
    for name, source in PACKAGES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    run = subprocess.run(
        [sys.executable, "samples.py"], cwd=root, capture_output=True, text=True, check=True
    )
    captured = json.loads(run.stdout)
    uncaught = subprocess.run(
        [sys.executable, "-c", "import samples; samples.direct_cause()"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    captured["uncaught"] = uncaught.stderr
    return captured


def summary(exceptions: list[ParsedException]) -> list[tuple]:
    """What must survive any log noise: classes, messages, frames and the chain links."""
    return [
        (
            exception.qualified_class,
            exception.message,
            exception.frames,
            None if exception.cause_index is None else exceptions[exception.cause_index].message,
            exception.cause_kind,
            exception.has_traceback,
        )
        for exception in exceptions
    ]


def prefixed(prefix: str) -> Callable[[str], str]:
    """A style that puts ``prefix`` in front of every line, as vLLM, Ray and torchrun do."""
    return lambda text: "".join(prefix + line for line in text.splitlines(keepends=True))


def coloured(text: str) -> str:
    """Terminal colours around the level word and around every line."""
    coloured_prefix = "\x1b[1;31mERROR\x1b[0m 08-14 12:00:01 \x1b[2m[core.py:710]\x1b[0m "
    lines = text.splitlines(keepends=True)
    return "".join(f"{coloured_prefix}\x1b[31m{line.rstrip()}\x1b[0m\n" for line in lines)


def ticking(text: str) -> str:
    """A container runtime's prefix, whose timestamp differs on every line."""
    lines = text.splitlines(keepends=True)
    return "".join(f"2026-08-14T12:00:01.{n:06d}Z stderr F {line}" for n, line in enumerate(lines))


def logged(text: str) -> str:
    """logging.exception(): one prefixed message line, then the bare traceback."""
    return "2026-08-14 12:00:01,123 ERROR Engine failed\n" + text


STYLES: dict[str, Callable[[str], str]] = {
    "plain": lambda text: text,
    "vllm": prefixed(VLLM_PREFIX),
    "rank": prefixed("[rank0]: "),
    "rank12": prefixed("[rank12]: "),
    "ray": prefixed("(RayWorkerWrapper pid=5678) "),
    "ray_stacked": prefixed("(RayWorkerWrapper pid=5678, ip=10.0.0.7) [rank1]: " + VLLM_PREFIX),
    "timestamp_level": prefixed("2026-08-14 12:00:01,123 ERROR "),
    "iso_bracket": prefixed("[2026-08-14T12:00:01.123Z] "),
    "sglang": prefixed("[2026-08-14 12:00:01 TP0] "),
    "glog": prefixed("E1114 12:00:01.123456 1234 file.cc:12] "),
    "ticking": ticking,
    "logged": logged,
    "mid_line_header": lambda text: "[2026-08-14 12:00:01 TP0] Scheduler hit an exception: " + text,
    # older vLLM, docker compose, journald, a quoted reply
    "vllm_old": prefixed("ERROR 12-05 20:24:46 engine.py:366] "),
    "compose": prefixed("vllm-1  | "),
    "journald": prefixed("Aug 19 18:34:30 gpu-host vllm[8707]: "),
    "quoted": lambda text: "".join(
        "> " + line if line.strip() else ">\n" for line in text.splitlines(keepends=True)
    ),
    "ansi": coloured,
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "progress_bar": lambda text: "Loading: 10%\rLoading: 55%\rLoading: 100%\n" + text,
}

SCENARIOS = [
    "nested_keyerror",
    "direct_cause",
    "context",
    "no_message",
    "stop_iteration",
    "multiline",
    "recursion",
    "qualified",
    "out_of_memory",
    "syntax_error",
    "ray_task_error",
    "group",
]

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_nested_keyerror_frames(real: dict[str, str]) -> None:
    (error,) = parse_exceptions(real["nested_keyerror"])
    assert (error.error_class, error.qualified_class) == ("KeyError", "KeyError")
    assert error.message == "'max_model_len'"
    assert error.has_traceback
    assert error.cause_index is None
    assert error.cause_kind is None
    assert [frame.function for frame in error.frames] == [
        "<module>",
        "nested_keyerror",
        "start",
        "lookup",
        "load",
    ]
    assert error.frames[-1].source == "return config[key]"
    assert all(frame.file.endswith("samples.py") for frame in error.frames)
    assert all("^" not in frame.source and "~" not in frame.source for frame in error.frames)
    assert error.frames[-1].line == 12


def test_direct_cause_is_linked(real: dict[str, str]) -> None:
    cause, outer = parse_exceptions(real["direct_cause"])
    assert (cause.error_class, cause.index, cause.cause_index) == ("KeyError", 0, None)
    assert (outer.error_class, outer.message) == (
        "RuntimeError",
        "Engine core initialization failed.",
    )
    assert (outer.index, outer.cause_index, outer.cause_kind) == (1, 0, "cause")


def test_uncaught_output_matches_format_exc(real: dict[str, str]) -> None:
    def inner(text: str) -> list[tuple]:
        """All but the outermost frame, which differs: the caller is not the same."""
        return [
            (e.qualified_class, e.message, e.frames[1:], e.cause_index, e.cause_kind)
            for e in parse_exceptions(text)
        ]

    assert inner(real["uncaught"]) == inner(real["direct_cause"])


def test_exception_during_handling_is_context(real: dict[str, str]) -> None:
    first, second = parse_exceptions(real["context"])
    assert first.error_class == "KeyError"
    assert (second.error_class, second.message) == ("ZeroDivisionError", "division by zero")
    assert (second.cause_index, second.cause_kind) == (0, "context")


@pytest.mark.parametrize("scenario", ["no_message", "stop_iteration"])
def test_exception_without_message(real: dict[str, str], scenario: str) -> None:
    text = real[scenario]
    (error,) = parse_exceptions(text)
    expected = {"no_message": "KeyboardInterrupt", "stop_iteration": "StopIteration"}[scenario]
    assert (error.error_class, error.message, error.message_line_spans) == (expected, "", ())
    assert text[error.span[0] : error.span[1]].endswith(expected)
    assert error.message_span == (error.span[1], error.span[1])


def test_multiline_message(real: dict[str, str]) -> None:
    text = real["multiline"]
    (error,) = parse_exceptions(text)
    assert error.message == "first line\nsecond line\n  indented third"
    assert [text[start:end] for start, end in error.message_line_spans] == [
        "first line",
        "second line",
        "  indented third",
    ]


def test_recursion_frames_are_cut(real: dict[str, str]) -> None:
    assert "[Previous line repeated" in real["recursion"]
    (error,) = parse_exceptions(real["recursion"])
    assert error.error_class == "RecursionError"
    assert error.message.startswith("maximum recursion depth exceeded")
    assert [frame.function for frame in error.frames][-1] == "recurse"


@pytest.mark.parametrize(
    ("scenario", "short", "qualified"),
    [
        ("qualified", "EngineDeadError", "vllm.v1.engine.exceptions.EngineDeadError"),
        ("out_of_memory", "OutOfMemoryError", "torch.OutOfMemoryError"),
    ],
)
def test_qualified_class(real: dict[str, str], scenario: str, short: str, qualified: str) -> None:
    (error,) = parse_exceptions(real[scenario])
    assert (error.error_class, error.qualified_class) == (short, qualified)
    last_line_only = real[scenario].rstrip("\n").splitlines()[-1]
    (bare,) = parse_exceptions(last_line_only)
    assert (bare.error_class, bare.qualified_class, bare.message) == (
        short,
        qualified,
        error.message,
    )
    assert not bare.has_traceback
    assert bare.frames == ()


def test_syntax_error_frame(real: dict[str, str]) -> None:
    (error,) = parse_exceptions(real["syntax_error"])
    assert (error.error_class, error.message) == ("SyntaxError", "'(' was never closed")
    assert error.frames[-1] == Frame("config_loader.py", 1, "", "engine = start(")


def test_dynamic_class_name_keeps_its_parentheses(real: dict[str, str]) -> None:
    (error,) = parse_exceptions(real["ray_task_error"])
    assert error.error_class == "RayTaskError(ValueError)"
    assert error.qualified_class == "ray.exceptions.RayTaskError(ValueError)"


def test_builtins_prefix_maps_to_short_class() -> None:
    (error,) = parse_exceptions("builtins.ValueError: bad value")
    assert (error.error_class, error.qualified_class) == ("ValueError", "builtins.ValueError")


def test_exception_group(real: dict[str, str]) -> None:
    group, *members = parse_exceptions(real["group"])
    assert (group.error_class, group.message) == (
        "ExceptionGroup",
        "workers failed (2 sub-exceptions)",
    )
    assert group.has_traceback
    assert group.frames[-1].function == "group"
    assert [(member.error_class, member.message) for member in members] == [
        ("ValueError", "rank 0"),
        ("TypeError", "rank 1"),
    ]


@pytest.mark.parametrize(
    ("style", "scenario"),
    # An exception group's margin is only recognised at the start of a line.
    [(t, s) for t in STYLES for s in SCENARIOS if (t, s) != ("mid_line_header", "group")],
)
def test_log_noise_changes_nothing(real: dict[str, str], style: str, scenario: str) -> None:
    expected = summary(parse_exceptions(real[scenario]))
    text = STYLES[style](real[scenario])
    found = parse_exceptions(text)
    assert summary(found) == expected
    for exception in found:
        head = exception.qualified_class
        first_line = exception.message.split("\n")[0]
        covered = ANSI.sub("", text[exception.span[0] : exception.span[1]])
        assert (f"{head}: {first_line}" if exception.message else head) in covered
        message_lines = exception.message.split("\n") if exception.message_line_spans else []
        for (start, end), line in zip(exception.message_line_spans, message_lines, strict=True):
            if style == "ansi":
                assert ANSI.sub("", text[start:end]) == line
                assert not line or text[start] == line[0]
            else:
                assert text[start:end] == line


@pytest.mark.parametrize(
    "scenario", ["nested_keyerror", "direct_cause", "recursion", "syntax_error"]
)
def test_indentation_lost(real: dict[str, str], scenario: str) -> None:
    flat = "".join(line.lstrip(" ") for line in real[scenario].splitlines(keepends=True))
    assert summary(parse_exceptions(flat)) == summary(parse_exceptions(real[scenario]))


def test_rank_prefix_without_space(real: dict[str, str]) -> None:
    text = prefixed("[rank12]:")(real["direct_cause"])
    assert summary(parse_exceptions(text)) == summary(parse_exceptions(real["direct_cause"]))


def test_message_span_of_single_line_message(real: dict[str, str]) -> None:
    text = real["nested_keyerror"]
    (error,) = parse_exceptions(text)
    assert text[error.message_span[0] : error.message_span[1]] == error.message
    assert text[error.span[0] : error.span[1]] == text.rstrip("\n")
    noisy = STYLES["vllm"](text)
    (error,) = parse_exceptions(noisy)
    assert noisy[error.message_span[0] : error.message_span[1]] == "'max_model_len'"
    assert noisy[error.span[0] :].startswith("Traceback (most recent call last):")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("(EngineCore_DP0 pid=1234) ", "(EngineCore_DP1 pid=1235) "),
        ("[rank0]: ", "[rank1]: "),
        ("", "(RayWorkerWrapper pid=5678) "),
    ],
)
def test_interleaved_processes(real: dict[str, str], first: str, second: str) -> None:
    one = prefixed(first)(real["nested_keyerror"]).splitlines(keepends=True)
    two = prefixed(second)(real["direct_cause"]).splitlines(keepends=True)
    text = "".join(line for pair in zip_longest(one, two, fillvalue="") for line in pair)
    expected = summary(parse_exceptions(real["nested_keyerror"])) + summary(
        parse_exceptions(real["direct_cause"])
    )
    found = parse_exceptions(text)
    assert sorted(summary(found), key=repr) == sorted(expected, key=repr)
    assert all(e.cause_index is None or e.cause_index < e.index for e in found)


def test_two_tracebacks_in_one_paste(real: dict[str, str]) -> None:
    for separator in ("", "\n"):
        text = real["nested_keyerror"] + separator + real["multiline"]
        found = parse_exceptions(text)
        assert [e.error_class for e in found] == ["KeyError", "ValueError"]
        assert [e.index for e in found] == [0, 1]
        assert found[1].message == "first line\nsecond line\n  indented third"
        assert found[0].span[1] <= found[1].span[0]


@pytest.mark.parametrize(
    "marker", ["  ...", "...", "  ... 12 frames omitted", "  [Previous line repeated 3 more times]"]
)
def test_cut_frames(real: dict[str, str], marker: str) -> None:
    lines = real["nested_keyerror"].splitlines()
    frames = [n for n, line in enumerate(lines) if line.startswith('  File "')]
    cut = [*lines[: frames[1]], marker, *lines[frames[-1] :]]
    (error,) = parse_exceptions("\n".join(cut))
    (whole,) = parse_exceptions(real["nested_keyerror"])
    assert error.frames == (whole.frames[0], whole.frames[-1])
    assert (error.error_class, error.message) == (whole.error_class, whole.message)


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s not in ("multiline", "group")])
def test_last_line_only(real: dict[str, str], scenario: str) -> None:
    last = real[scenario].rstrip("\n").splitlines()[-1]
    (error,) = parse_exceptions(last)
    assert not error.has_traceback
    assert error.span == (0, len(last))
    assert error.message == parse_exceptions(real[scenario])[-1].message


def noise(count: int, prefix: str = "") -> str:
    """Unrelated serving log lines, the kind a traceback is buried in."""
    shapes = [
        "INFO 08-14 12:00:{s:02d} [loggers.py:123] Avg prompt throughput: {n}.0 tokens/s, "
        "Running: {n} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.{n}%",
        "INFO 08-14 12:00:{s:02d} [async_llm.py:270] Added request cmpl-{n}.",
        "WARNING 08-14 12:00:{s:02d} [config.py:88] Casting torch.bfloat16 to torch.float16.",
        'INFO:     127.0.0.1:{n} - "POST /v1/completions HTTP/1.1" 200 OK',
        "[2026-08-14 12:00:{s:02d} TP0] Decode batch. #running-req: {n}, #token: 1{n}",
    ]
    return "".join(
        prefix + shapes[n % len(shapes)].format(n=n, s=n % 60) + "\n" for n in range(count)
    )


@pytest.mark.parametrize("style", ["plain", "vllm", "logged"])
def test_traceback_inside_long_log(real: dict[str, str], style: str) -> None:
    assert parse_exceptions(noise(200)) == []
    body = STYLES[style](real["direct_cause"])
    text = noise(100) + body + noise(100)
    found = parse_exceptions(text)
    assert summary(found) == summary(parse_exceptions(real["direct_cause"]))
    start = text.index(body)
    assert all(start <= e.span[0] and e.span[1] <= start + len(body) for e in found)


def test_pytest_failure_lines(tmp_path: Path) -> None:
    (tmp_path / "test_failing.py").write_text(PYTEST_FAILURE)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_failing.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    (error,) = parse_exceptions(run.stdout)
    assert (error.error_class, error.message) == ("ValueError", "boom {'a': 1}\nsecond line")


@pytest.mark.parametrize(
    "text",
    [
        "Note: restart the server",
        "Error: could not connect",
        "Warning: low memory",
        "[Errno 2] No such file or directory",
        "Loading safetensors checkpoint shards: 100% Completed | 2/2",
        "e.g. Foo: bar",
        "http://localhost:8000/v1",
        "Traceback (most recent call last):\n",
    ],
)
def test_ordinary_lines_are_not_exceptions(text: str) -> None:
    """In a log, that is; a paste of one line alone is a message (see below)."""
    assert parse_exceptions(text + "\nINFO:     Started server process [1]\n") == []


def test_bare_line_with_level_prefix() -> None:
    text = "ERROR: torch.OutOfMemoryError: CUDA out of memory."
    (error,) = parse_exceptions(text)
    assert (error.error_class, error.message) == ("OutOfMemoryError", "CUDA out of memory.")
    assert text[error.message_span[0] : error.message_span[1]] == "CUDA out of memory."


FRAGMENTS = [
    "Traceback (most recent call last):",
    '  File "x.py", line 3, in f',
    '  File "',
    "    return g()",
    "           ^^^",
    "ValueError: bad",
    "KeyboardInterrupt",
    "torch.OutOfMemoryError: CUDA",
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
    "  [Previous line repeated 996 more times]",
    "  + Exception Group Traceback (most recent call last):",
    "  | ValueError: 1",
    "  +-+---------------- 1 ----------------",
    "E       ValueError: x",
    VLLM_PREFIX,
    "[rank0]: ",
    "(RayWorkerWrapper pid=5678) ",
    "\x1b[31m",
    "\x1b]8;;http://x\x07",
    "\r",
    "\r\n",
    "\n",
    "",
]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=400))
def test_never_raises_on_arbitrary_text(text: str) -> None:
    check_invariants(text, parse_exceptions(text))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(FRAGMENTS) | st.text(alphabet=st.characters(max_codepoint=127)),
        max_size=40,
    ).map("".join)
)
def test_never_raises_on_traceback_fragments(text: str) -> None:
    check_invariants(text, parse_exceptions(text))


def assert_passing_over_finds_the_same(text: str) -> None:
    """The parser goes straight to the lines that may begin something: on each stream of
    `text` it finds what it finds when it looks at every line."""
    streams: dict[str, list] = {}
    for line in clean_lines(text):
        streams.setdefault(line.stream, []).append(line)
    cut_at = len(text) if text[-1:] not in ("\n", "\r", "") else -1
    for lines in streams.values():
        every_line = parse_stream(every_row(lines, cut_at), None)
        assert parse_lines(lines, cut_at) == every_line, text[:2000]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(FRAGMENTS) | st.text(alphabet=st.characters(max_codepoint=127)),
        max_size=40,
    ).map("".join)
)
def test_the_lines_passed_over_begin_nothing_in_fragments(text: str) -> None:
    assert_passing_over_finds_the_same(text)


def test_the_lines_passed_over_begin_nothing_in_real_pastes() -> None:
    """Every real paste, in every shape people paste it, alone and between log lines."""
    log = "".join(
        f"INFO 08-14 12:00:{n:02d} [metrics.py:{n}] Avg prompt throughput: {n} tokens/s\n"
        for n in range(20)
    )
    for case in load_cases().values():
        for transform in TRANSFORMS.values():
            pasted = transform(case["paste"])
            assert_passing_over_finds_the_same(pasted)
            assert_passing_over_finds_the_same(log + pasted + "\n" + log)


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=40, deadline=timedelta(seconds=20), derandomize=True)
@given(hostile_pastes())
def test_hostile_pastes_parse_in_bounded_time(text: str) -> None:
    """Floods of newlines, CRs, NULs and colour codes, lines of a mebibyte, lone surrogates:
    the parser returns, within the deadline of the test (one input, 20 s)."""
    check_invariants(text, parse_exceptions(text))


def check_invariants(text: str, found: list[ParsedException]) -> None:
    """What holds for any paste: indexes, chain order and spans inside the text."""
    assert [e.index for e in found] == list(range(len(found)))
    for e in found:
        assert e.cause_index is None or e.cause_index < e.index
        assert (e.cause_index is None) == (e.cause_kind is None)
        assert 0 <= e.span[0] <= e.message_span[0] <= e.message_span[1] <= e.span[1] <= len(text)
        assert e.error_class or not (e.has_traceback or e.frames)  # "": a message alone
        assert e.qualified_class.endswith(e.error_class)


def per_byte_growth(make: Callable[[int], str], small: int) -> float:
    """How much more each byte costs at ten times ``small`` bytes: about 1 when linear.

    Each size's least CPU time (this thread's, not the clock's: another process taking the
    core is not the parser's time) over five runs, the two sizes taking turns: this
    machine's speed comes and goes by half within a minute, and runs of one size together
    could meet a fast moment while the other's met a slow one. The garbage collector is
    off while they run: a paste of many tiny matches triggers it again and again, and each
    full pass walks every object of the test process (the other tests' too), so the growth
    measured would be the process's heap, not the parser."""
    texts = {"short": make(small), "long": make(small * 10)}
    least = dict.fromkeys(texts, float("inf"))
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            for size, text in texts.items():
                begin = time.thread_time()
                parse_exceptions(text)
                least[size] = min(least[size], time.thread_time() - begin)
    finally:
        gc.enable()
    return (least["long"] / len(texts["long"])) / (least["short"] / len(texts["short"]))


@pytest.mark.perf
def test_time_is_linear_on_realistic_paste(real: dict[str, str]) -> None:
    unit = noise(40, "(EngineCore_DP0 pid=1234) ") + STYLES["vllm"](real["direct_cause"])

    def paste(size: int) -> str:
        return (unit * (size // len(unit) + 1))[:size]

    assert len(parse_exceptions(paste(50_000))) > 10
    assert per_byte_growth(paste, 50_000) < 4


@pytest.mark.parametrize(
    "piece",
    [
        'File "',
        "a.",
        "\x1b[",
        "\x1b]",
        "(pid=",
        "[rank0]: ",
        "ValueError: x\n",
        "Traceback (most recent call last):\n",
        "\r",
    ],
)
@pytest.mark.perf
def test_time_is_linear_on_pathological_paste(piece: str) -> None:
    assert per_byte_growth(lambda size: piece * (size // len(piece)), 20_000) < 4


@pytest.mark.parametrize("scenario", ["nested_keyerror", "multiline", "qualified", "recursion"])
@pytest.mark.parametrize("style", ["plain", "vllm", "compose", "journald", "quoted"])
def test_frames_without_header(real: dict[str, str], scenario: str, style: str) -> None:
    """A paste from the middle of a log starts at a frame; frames still count."""
    lines = real[scenario].splitlines(keepends=True)
    first_frame = next(n for n, line in enumerate(lines) if line.lstrip().startswith('File "'))
    text = STYLES[style]("".join(lines[first_frame + 2 :]))
    (whole,) = parse_exceptions(real[scenario])
    (error,) = parse_exceptions(text)
    assert error.frames == whole.frames[1:]
    assert (error.qualified_class, error.message) == (whole.qualified_class, whole.message)
    assert error.has_traceback


def test_message_stops_at_the_next_record(real: dict[str, str]) -> None:
    """Multiprocessing's "Process Process-3:" and a cut header are not message."""
    text = real["nested_keyerror"] + "Process Process-3:\nTraceback (most rec"
    (error,) = parse_exceptions(text)
    assert error.message == "'max_model_len'"


def test_paste_cut_in_a_word_is_no_exception(real: dict[str, str]) -> None:
    """Frames, then a line the end of the paste cut: `eng` is no exception class."""
    lines = real["nested_keyerror"].splitlines(keepends=True)
    assert parse_exceptions("".join(lines[:-1]) + "eng") == []
    assert parse_exceptions("".join(lines[:-1]) + "eng\n")[0].error_class == "eng"
    cut_message = parse_exceptions("".join(lines[:-1]) + "KeyError: 'max_mo")
    assert [(e.error_class, e.message) for e in cut_message] == [("KeyError", "'max_mo")]


# https://github.com/locuslab/TCN/issues/67: the paste ends inside the raise's source line
CUT_IN_RAISE = (
    "Traceback (most recent call last):\n"
    '  File "D:\\javaworkspace\\TCN\\add_test.py", line 63, in <module>\n'
    "    model.cuda()\n"
    '  File "D:\\anaconda3\\lib\\site-packages\\torch\\cuda\\__init__.py", line 210, '
    "in _lazy_init\n"
    '    raise AssertionError("Torch not compiled with C'
)


@pytest.mark.parametrize("end", ["", "\n", "\n\n"])
def test_a_paste_cut_in_the_raise_names_its_class_and_message(end: str) -> None:
    """No exception line follows the last frame, whose source is a raise: the raise names
    the class and the start of the message, as far as the paste shows it."""
    text = CUT_IN_RAISE + end
    (error,) = parse_exceptions(text)
    assert (error.error_class, error.message) == ("AssertionError", "Torch not compiled with C")
    assert [frame.line for frame in error.frames] == [63, 210]
    assert text[slice(*error.message_span)] == error.message
    assert error.span[0] == 0


@pytest.mark.parametrize(
    "source",
    [
        "    raise ValueError(",  # the message on the next line: the class alone
        "    raise make_error(code)",  # no exception's class
        "    self.run(model)",  # no raise
    ],
)
def test_a_paste_cut_after_a_frame(source: str) -> None:
    """Only a raise of an exception's class makes an exception of a cut traceback."""
    text = 'Traceback (most recent call last):\n  File "/x/vllm/config.py", line 5, in f\n' + source
    found = [(e.error_class, e.message, len(e.frames)) for e in parse_exceptions(text)]
    if "ValueError" in source:
        assert found == [("ValueError", "", 1)]
    else:  # at most the last line as a message alone, as before
        assert all(not (error_class or frames) for error_class, _, frames in found)


def test_a_paste_that_begins_inside_a_frame_line() -> None:
    """https://github.com/vllm-project/vllm/issues/1581: the selection began after `File "`
    of the first frame; its tail still names the file, line and function."""
    text = (
        'vllm/vllm/model_executor/models/chatglm.py", line 53, in __init__\n'
        "    assert self.total_num_kv_heads % tp_size == 0\n"
        "AssertionError\n"
    )
    (error,) = parse_exceptions(text)
    assert error.frames == (
        Frame(
            "vllm/vllm/model_executor/models/chatglm.py",
            53,
            "__init__",
            "assert self.total_num_kv_heads % tp_size == 0",
        ),
    )
    later = "AssertionError: x\n" + text  # only the paste's first line may begin inside one
    assert [len(error.frames) for error in parse_exceptions(later)] == [0, 0]


# Real pastes from public issue threads, verbatim (the error excerpt of each):
# what people paste through. Each names its source.
REAL_WRAPPED = {
    # https://github.com/ruipeterpan/specreason/issues/4: a vLLM log line in backticks
    "backticks around a log line": (
        "`ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: This model's maximum context "
        "length is 8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 "
        "in the completion). Please reduce the length of the messages or completion.`",
        "ValueError",
        "This model's maximum context length is 8192 tokens. However, you requested 8203 tokens "
        "(7691 in the messages, 512 in the completion). Please reduce the length of the "
        "messages or completion.",
    ),
    # https://github.com/chatchat-space/Langchain-Chatchat/issues/1645: Chinese prose puts no
    # space before the class
    "after a CJK word": (
        "2.5版本使用Qwen-14b-chat，python startup.py --all-webui后报错ValueError: Bfloat16 is only "  # noqa: RUF001 (verbatim)
        "supported on GPUs with compute capability of at least 8.0. Your Tesla V100-SXM2-32GB "
        "GPU has compute capability 7.0.",
        "ValueError",
        "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla "
        "V100-SXM2-32GB GPU has compute capability 7.0.",
    ),
    # https://github.com/sgl-project/sglang/issues/11970: the closing backtick on its own line
    "backticks over two lines": (
        "`ValueError: token_to_kv_pool_allocator memory leak detected! "
        "self.max_total_num_tokens=270331, available_size=644, evictable_size=269628, "
        "protected_size=0\n`",
        "ValueError",
        "token_to_kv_pool_allocator memory leak detected! self.max_total_num_tokens=270331, "
        "available_size=644, evictable_size=269628, protected_size=0",
    ),
    # https://github.com/JIA-Lab-research/VFF/issues/13
    "backticks around an exception line": (
        "`RuntimeError: Default process group has not been initialized, please make sure to "
        "call init_process_group.`",
        "RuntimeError",
        "Default process group has not been initialized, please make sure to call "
        "init_process_group.",
    ),
    # https://github.com/google/tunix/pull/222: a fenced traceback whose message quotes code
    "markdown fence": (
        "```\n"
        'File "/home/tsbao_google_com/vllm/vllm/v1/engine/processor.py", line 268, in '
        "process_inputs\n"
        "    self._validate_model_inputs(processed_inputs, lora_request)\n"
        '  File "/home/tsbao_google_com/vllm/vllm/v1/engine/processor.py", line 352, in '
        "_validate_model_inputs\n"
        "    self._validate_model_input(decoder_inputs,\n"
        '  File "/home/tsbao_google_com/vllm/vllm/v1/engine/processor.py", line 405, in '
        "_validate_model_input\n"
        "    raise ValueError(\n"
        "ValueError: The decoder prompt (length 44) is longer than the maximum model length of "
        "16. Make sure that `max_model_len` is no smaller than the number of text tokens.\n"
        "```",
        "ValueError",
        "The decoder prompt (length 44) is longer than the maximum model length of 16. Make "
        "sure that `max_model_len` is no smaller than the number of text tokens.",
    ),
    # https://github.com/vllm-project/vllm/issues/26161: pydantic's summary, in a fence
    "pydantic in a fence": (
        "```\n"
        'vllm/engine/arg_utils.py", line 963, in create_model_config\n'
        "    return ModelConfig(\n"
        "           ^^^^^^^^^^^^\n"
        '  File "/root/miniconda3/lib/python3.12/site-packages/pydantic/_internal/'
        '_dataclasses.py", line 127, in __init__\n'
        "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), "
        "self_instance=s)\n"
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, Expecting value: line 1 column 1 (char 0) [type=value_error, "
        "input_value=ArgsKwargs((), {'model': ...rocessor_plugin': None}), "
        "input_type=ArgsKwargs]\n"
        "    For further information visit https://errors.pydantic.dev/2.12/v/value_error\n"
        "```",
        "ValueError",
        "Expecting value: line 1 column 1 (char 0)",
    ),
    # https://github.com/OpenSQZ/MiniCPM-V-CookBook/issues/51: the same under vLLM's process tag
    "pydantic under a process tag": (
        "```\n"
        'File "/root/miniconda3/lib/python3.12/site-packages/pydantic/_internal/'
        '_dataclasses.py", line 127, in __init__\n'
        "(APIServer pid=2994609)     s.__pydantic_validator__.validate_python(ArgsKwargs(args, "
        "kwargs), self_instance=s)\n"
        "(APIServer pid=2994609) pydantic_core._pydantic_core.ValidationError: 1 validation "
        "error for ModelConfig\n"
        "(APIServer pid=2994609)   Value error, Expecting value: line 1 column 1 (char 0) "
        "[type=value_error, input_value=ArgsKwargs((), {'model': ...rocessor_plugin': None}), "
        "input_type=ArgsKwargs]\n"
        "(APIServer pid=2994609)     For further information visit "
        "https://errors.pydantic.dev/2.12/v/value_error\n"
        "```",
        "ValueError",
        "Expecting value: line 1 column 1 (char 0)",
    ),
    # https://github.com/vllm-project/vllm/issues/35967: pydantic's line for the error alone
    "pydantic's error line alone": (
        "Value error, invalid literal for int() with base 10: '4.0' [type=value_error, "
        "input_value=ArgsKwargs((), {'model_co...transfer_config': None}), "
        "input_type=ArgsKwargs]",
        "ValueError",
        "invalid literal for int() with base 10: '4.0'",
    ),
    # https://github.com/QwenLM/Qwen3/issues/1321: SGLang's error body, with JSON's stray \'
    "JSON error body": (
        '{"object":"error","message":"The input (61709 tokens) is longer than the '
        'model\\\'s context length (40960 tokens).","type":"BadRequestError",'
        '"param":null,"code":400}',
        "BadRequestError",
        "The input (61709 tokens) is longer than the model's context length (40960 tokens).",
    ),
    # https://github.com/OpenMOSS/MOSS-TTSD/issues/71: an error body with no type
    "JSON error body without a type": (
        '{"error":{"message":"CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a '
        "total capacity of 23.53 GiB of which 20.38 MiB is free. Including non-PyTorch memory, "
        "this process has 1.81 GiB memory in use. Process 5403 has 21.69 GiB memory in use. Of "
        "the allocated memory 1.34 GiB is allocated by PyTorch, and 94.59 MiB is reserved by "
        "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        '(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"}}',
        "",
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 23.53 "
        "GiB of which 20.38 MiB is free. Including non-PyTorch memory, this process has 1.81 "
        "GiB memory in use. Process 5403 has 21.69 GiB memory in use. Of the allocated memory "
        "1.34 GiB is allocated by PyTorch, and 94.59 MiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  "
        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
    ),
    # https://github.com/vllm-project/vllm/issues/20409: the openai client's repr of vLLM's body
    "openai client's error, quoted": (
        "Error Occurs: \"Error code: 400 - {'object': 'error', 'message': \"This model's maximum "
        "context length is 16384 tokens. However, you requested 19591 tokens (9591 in the "
        "messages, 10000 in the completion). Please reduce the length of the messages or "
        "completion. None\", 'type': 'BadRequestError', 'param': None, 'code': 400}\"",
        "BadRequestError",
        "This model's maximum context length is 16384 tokens. However, you requested 19591 "
        "tokens (9591 in the messages, 10000 in the completion). Please reduce the length of "
        "the messages or completion. None",
    ),
    # https://github.com/crewAIInc/crewAI-examples/issues/121: OpenAI's own body, in a sentence
    "openai client's error in a sentence": (
        "I receive an error message: openai.BadRequestError: Error code: 400 - {'error': "
        "{'message': \"This model's maximum context length is 8192 tokens. However, your "
        'messages resulted in 8227 tokens. Please reduce the length of the messages.", '
        "'type': 'invalid_request_error', 'param': 'messages', 'code': "
        "'context_length_exceeded'}}",
        "BadRequestError",
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 8227 tokens. Please reduce the length of the messages.",
    ),
    # https://github.com/xorbitsai/inference/issues/3135: xinference's address in the message
    "xinference's address after its own words": (
        "    raise RuntimeError(\n"
        "RuntimeError: Failed to launch model, detail: [address=0.0.0.0:35197, pid=418773] "
        "'reasoning_content'",
        "RuntimeError",
        "'reasoning_content'",
    ),
    # https://github.com/verl-project/verl/issues/2921: exception lines quoted in sentences
    "quoted in a sentence": (
        'for sglang[all]=0.4.6.post5 it occurs that "ImportError: undefined symbol: '
        '_ZN3c105ErrorC2ENS_14SourceLocationESs" , \n'
        'for sglang[all]=0.4.9.post6 it occurs that "ModuleNotFoundError: No module named '
        "'sglang.srt.weight_sync'\"",
        "ModuleNotFoundError",
        "No module named 'sglang.srt.weight_sync'",
    ),
    # https://github.com/Koed00/django-q/issues/713: a message alone, in backticks
    "a message alone in backticks": (
        "`Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, "
        "you must use the 'spawn' start method`",
        "",
        "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you "
        "must use the 'spawn' start method",
    ),
    # a real paste: vLLM 0.33.0's message (config/vllm.py) with no class in front
    "a message alone": (
        "max_num_scheduled_tokens is set to -1792 based on the speculative decoding settings, "
        "which does not allow any tokens to be scheduled.",
        "",
        "max_num_scheduled_tokens is set to -1792 based on the speculative decoding settings, "
        "which does not allow any tokens to be scheduled.",
    ),
    # https://github.com/sgl-project/sglang/issues/12461: an issue title, its template's tag
    "an issue title's tag": (
        "[Bug] ValueError: Tokens not accepted: 151551",
        "ValueError",
        "Tokens not accepted: 151551",
    ),
    # https://github.com/sgl-project/sglang/issues/12835: a title naming no class
    "an issue title's tag before a message alone": (
        "[Bug] Qwen3NextForCausalLM has no SGlang implementation",
        "",
        "Qwen3NextForCausalLM has no SGlang implementation",
    ),
    # https://github.com/vllm-project/vllm/issues/10517: a bare log ending in its message
    "a bare log ending in a message": (
        "Loading model weights took 14.9888 GB\n"
        "# GPU blocks: 1478, # CPU blocks: 2048\n"
        "The model's max seq len (29000) is larger than the maximum number of tokens that can "
        "be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.\n",
        "",
        "The model's max seq len (29000) is larger than the maximum number of tokens that can "
        "be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.",
    ),
}


@pytest.mark.parametrize(
    ("text", "error_class", "message"), REAL_WRAPPED.values(), ids=REAL_WRAPPED.keys()
)
def test_real_pastes_through_wrappers(text: str, error_class: str, message: str) -> None:
    """The last exception of each paste is the one it shows, with the message inside the
    wrappers; its message spans point at that message in the paste."""
    found = parse_exceptions(text)
    check_invariants(text, found)
    last = found[-1]
    assert (last.error_class, last.message) == (error_class, message)
    start, end = last.message_span
    assert text[start:end].replace("\\'", "'").startswith(message.split("\n")[0][:40])


def test_a_fenced_traceback_keeps_its_frames_and_leaves_the_fence_out() -> None:
    (error,) = parse_exceptions(REAL_WRAPPED["markdown fence"][0])
    assert [(f.line, f.function) for f in error.frames] == [
        (268, "process_inputs"),
        (352, "_validate_model_inputs"),
        (405, "_validate_model_input"),
    ]
    assert not error.message.endswith("`")


# https://github.com/xorbitsai/inference/issues/1715: xinference's own log line repeats the
# message after its address, then prints the traceback (cut here, as in the thread)
XINFERENCE = (
    "ValueError: [address=127.0.0.1:37657, pid=3125985] User-specified max_model_len (4096) is "
    "greater than the derived max_model_len (seq_length=2048 or model_max_length=None in "
    "model's config.json). This may lead to incorrect model outputs or CUDA errors. Make sure "
    "the value is correct and within the model context size.\n"
    "2024-06-25 16:32:00,563 xinference.api.restful_api 3118895 ERROR    "
    "[address=127.0.0.1:37657, pid=3125985] User-specified max_model_len (4096) is greater than "
    "the derived max_model_len (seq_length=2048 or model_max_length=None in model's "
    "config.json). This may lead to incorrect model outputs or CUDA errors. Make sure the value "
    "is correct and within the model context size.\n"
    "Traceback (most recent call last):\n"
    '  File "/www/NLP/inference/xinference/api/restful_api.py", line 770, in launch_model\n'
    "    model_uid = await (await self._get_supervisor_ref()).launch_builtin_model(\n"
)
# https://github.com/xorbitsai/inference/issues/3745: SGLang raising inside xinference
XINFERENCE_SGLANG = (
    "    result = self.fn(*self.args, **self.kwargs)\n"
    '  File "/opt/inference/xinference/model/llm/sglang/core.py", line 240, in load\n'
    "    self._engine = sgl.Runtime(\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/api.py", line 38, in Runtime\n'
    "    return Runtime(*args, **kwargs)\n"
    '  File "/usr/local/lib/python3.10/dist-packages/sglang/lang/backend/runtime_endpoint.py", '
    "line 396, in __init__\n"
    "    raise RuntimeError(\n"
    "RuntimeError: [address=0.0.0.0:43399, pid=1793] Initialization failed. Please see the "
    "error messages above.\n"
    "2025-06-30 06:18:36,707 xinference.core.progress_tracker 113 DEBUG    Setting progress, "
    "request id: launching-gemma-3-it-0, progress: 1.0\n"
    "2025-06-30 06:18:36,801 xinference.core.worker 113 ERROR    [request "
    "b087e27a-55b4-11f0-93e7-7ac282aee84d] Leave launch_builtin_model, error: "
    "[address=0.0.0.0:43399, pid=1793] Initialization failed. Please see the error messages "
    "above., elapsed time: 17 s\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/xinference/core/utils.py", line 93, in '
    "wrapped\n"
    "    ret = await func(*args, **kwargs)\n"
)


def test_xinference_wrappers_leave_the_engines_message() -> None:
    first, *rest = parse_exceptions(XINFERENCE)
    assert first.error_class == "ValueError"
    assert first.message.startswith("User-specified max_model_len (4096) is greater than")
    assert first.message.endswith("within the model context size.")
    assert "\n" not in first.message  # xinference's log line is a record of its own
    assert [e.error_class for e in rest] == []  # the cut traceback has no exception line
    (error,) = parse_exceptions(XINFERENCE_SGLANG)
    assert error.message == "Initialization failed. Please see the error messages above."
    assert error.frames[-1].file.endswith("sglang/lang/backend/runtime_endpoint.py")


# https://github.com/ray-project/ray/issues/47759: a Ray actor's torch rank, both tags on
# every line, the second error raised while handling the first
RAY_RANK = (
    "(RayTrainWorker pid=43515) [rank1]: Traceback (most recent call last):\n"
    '(RayTrainWorker pid=43515) [rank1]:   File "python/ray/_raylet.pyx", line 2250, in '
    "ray._raylet.task_execution_handler\n"
    '(RayTrainWorker pid=43515) [rank1]:   File "python/ray/_raylet.pyx", line 2081, in '
    "ray._raylet.execute_task_with_cancellation_handler\n"
    "(RayTrainWorker pid=43515) [rank1]: AttributeError: 'Worker' object has no attribute "
    "'core_worker'\n"
    "(RayTrainWorker pid=43515)\n"
    "(RayTrainWorker pid=43515) [rank1]: During handling of the above exception, another "
    "exception occurred:\n"
    "(RayTrainWorker pid=43515)\n"
    "(RayTrainWorker pid=43515) [rank1]: Traceback (most recent call last):\n"
    '(RayTrainWorker pid=43515) [rank1]:   File "python/ray/_raylet.pyx", line 2289, in '
    "ray._raylet.task_execution_handler\n"
    '(RayTrainWorker pid=43515) [rank1]:   File "/Users/mdenadai/.local/share/virtualenvs/'
    'mine-ec3snymA/lib/python3.12/site-packages/ray/_private/utils.py", line 178, in '
    "push_error_to_driver\n"
    "(RayTrainWorker pid=43515) [rank1]:     worker.core_worker.push_error(job_id, error_type, "
    "message, time.time())\n"
    "(RayTrainWorker pid=43515) [rank1]:     ^^^^^^^^^^^^^^^^^^\n"
    "(RayTrainWorker pid=43515) [rank1]: AttributeError: 'Worker' object has no attribute "
    "'core_worker'\n"
)
# https://github.com/Simple-Efficient/RL-Factory/issues/8: a RayTaskError around the actor's own
RAY_TASK = (
    "`ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=18948, "
    "ip=10.164.37.106, actor_id=2dbcd32867b5c511f131cbb201000000, repr=<main_ppo.TaskRunner "
    "object at 0x7f852c0b7490>)\n"
    '  File "rl-factory/verl/trainer/main_ppo.py", line 215, in run\n'
    "    trainer.fit()\n"
    '  File "rl-factory/verl/trainer/ppo/ray_trainer.py", line 952, in fit\n'
    "    gen_batch_output = self.actor_rollout_wg.generate_sequences_loop(gen_batch)\n"
    '  File "rl-factory/verl/single_controller/ray/base.py", line 49, in func\n'
    "    output = ray.get(output)\n"
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    "\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict\n"
    "\tactor_id: d9cc467228965f31cb6dbc9301000000\n"
)


def test_ray_wrappers() -> None:
    first, second = parse_exceptions(RAY_RANK)
    assert [e.error_class for e in (first, second)] == ["AttributeError", "AttributeError"]
    assert second.message == "'Worker' object has no attribute 'core_worker'"
    assert (second.cause_index, second.cause_kind) == (first.index, "context")
    assert second.frames[-1].function == "push_error_to_driver"
    wrapper, actor = parse_exceptions(RAY_TASK)
    assert wrapper.error_class == "RayTaskError(ActorDiedError)"
    assert actor.error_class == "ActorDiedError"
    assert actor.message.startswith("The actor died unexpectedly before finishing this task.")
    assert [f.line for f in actor.frames] == [215, 952, 49]


# https://github.com/cxzhou95/XLSR/issues/13 (its end: the message runs on for a screen)
WINDOWS = (
    "Traceback (most recent call last):\n"
    '  File "C:\\Users\\Downloads\\XLSR\\test.py", line 110, in <module>\n'
    "    model.load_state_dict(torch.load(os.path.join(opt.save_dir, 'best.pt'), "
    "map_location=device))\n"
    '  File "C:\\Users\\AppData\\Local\\anaconda3\\Lib\\site-packages\\torch\\nn\\modules\\'
    'module.py", line 2152, in load_state_dict\n'
    "    raise RuntimeError('Error(s) in loading state_dict for {}:\\n\\t{}'.format(\n"
    "RuntimeError: Error(s) in loading state_dict for XLSR:\n"
    '        Missing key(s) in state_dict: "Gblocks.0.conv0.conv2d_block.0.weight", '
    '"Gblocks.0.conv0.conv2d_block.0.bias"\n'
)
MODULE_PY = (
    "C:\\Users\\AppData\\Local\\anaconda3\\Lib\\site-packages\\torch\\nn\\modules\\module.py"
)


@pytest.mark.parametrize("escaped", [False, True], ids=["as printed", "escaped once more"])
def test_windows_paths(escaped: bool) -> None:
    """A Windows path, and the same path from a string's repr (each backslash doubled), give
    the same frame, so that a record's file is found in it."""
    text = WINDOWS.replace("\\", "\\\\") if escaped else WINDOWS
    (error,) = parse_exceptions(text)
    assert (error.frames[-1].file, error.frames[-1].line) == (MODULE_PY, 2152)
    assert error.message.startswith("Error(s) in loading state_dict for XLSR:\n")


# https://github.com/infinigence/Semi-PD/issues/17: warnings the warnings module printed
WARNINGS = (
    "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py:1326: UserWarning: "
    "token_to_kv_pool_allocator memory leak detected! available_size=961586, protected_size=0, "
    "self.max_total_num_tokens=961593\n"
    "self.token_to_kv_pool_allocator.available_size()=961586\n"
    "self.tree_cache.evictable_size()=0\n"
    "\n"
    "  warnings.warn(msg)\n"
    "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py:1336: UserWarning: "
    "req_to_token_pool memory leak detected!available_size=3756, total_size=3757\n"
    "\n"
    "  warnings.warn(msg)\n"
)


def test_warnings_lines_name_where_they_were_raised() -> None:
    first, second = parse_exceptions(WARNINGS)
    assert (first.error_class, second.error_class) == ("UserWarning", "UserWarning")
    assert first.message.endswith("self.tree_cache.evictable_size()=0")
    assert (
        second.message
        == "req_to_token_pool memory leak detected!available_size=3756, total_size=3757"
    )
    assert [(f.file.rpartition("/")[2], f.line) for f in second.frames] == [("scheduler.py", 1336)]


# torchbiggraph's use of a deprecated storage, as a terminal 128 columns wide showed it: the
# line wrapped right after the category, the message over three lines, then the source line
# the warnings module prints.
WRAPPED_WARNING = (
    "/home/u/.conda/envs/e/lib/python3.10/site-packages/torchbiggraph/tensorlist.py:88: "
    "UserWarning: \n"
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be "
    "the only storage class. This should \n"
    "only matter to you if you are using storages directly.\n"
    "  storage.resize_(storage.size() + 1)\n"
)


def test_a_warning_wrapped_after_its_category_has_its_message_below_not_its_source_line() -> None:
    (warning,) = parse_exceptions(WRAPPED_WARNING)
    assert warning.error_class == "UserWarning"
    assert warning.message == (
        "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will "
        "be the only storage class. This should\nonly matter to you if you are using storages "
        "directly."
    )
    assert [(f.file.rpartition("/")[2], f.line) for f in warning.frames] == [("tensorlist.py", 88)]
    (one_line,) = parse_exceptions(WRAPPED_WARNING.replace("UserWarning: \n", "UserWarning: "))
    assert "storage.resize_" not in one_line.message


# https://github.com/vllm-project/vllm/issues/9290: vLLM's engine logs the repr of the error
REPR = (
    "ERROR 10-11 12:27:29 engine.py:157] OutOfMemoryError('CUDA out of memory. Tried to "
    "allocate 138.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 2.19 MiB is free.')"
)


def test_an_exceptions_repr_in_a_log() -> None:
    (error,) = parse_exceptions(REPR)
    assert error.error_class == "OutOfMemoryError"
    assert error.message == (
        "CUDA out of memory. Tried to allocate 138.00 MiB. GPU 0 has a total capacity of 79.15 "
        "GiB of which 2.19 MiB is free."
    )


RICH_PROGRAM = """
import sys
from rich.console import Console
from rich.traceback import Traceback


def check(max_model_len):
    if max_model_len > 4096:
        raise ValueError(f"max_model_len ({max_model_len}) is greater than the derived 4096")


try:
    check(8192)
except ValueError:
    Console(file=sys.stdout, width=100, color_system=None).print(Traceback())
"""


def test_rich_boxed_traceback(tmp_path: Path) -> None:
    """rich draws frames in a box ("│ ... │") with their source; the exception line follows
    the box. Printed by rich itself."""
    (tmp_path / "serve.py").write_text(RICH_PROGRAM)
    run = subprocess.run(
        [sys.executable, "serve.py"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "╭" in run.stdout
    assert "│" in run.stdout
    (error,) = parse_exceptions(run.stdout)
    assert error.error_class == "ValueError"
    assert error.message == "max_model_len (8192) is greater than the derived 4096"
    assert [(f.file.rpartition("/")[2], f.line, f.function) for f in error.frames] == [
        ("serve.py", 13, "<module>"),
        ("serve.py", 9, "check"),
    ]
    assert error.frames[-1].source.startswith("raise ValueError(")


IPYTHON_PROGRAM = """
from IPython.core.interactiveshell import InteractiveShell

InteractiveShell.instance(colors="nocolor").run_cell(
    "import serve\\ntry:\\n    serve.check(8192)\\n"
    "except ValueError as error:\\n"
    "    raise RuntimeError('Engine core initialization failed.') from error"
)
"""
SERVE = """
def check(max_model_len):
    if max_model_len > 4096:
        raise ValueError(f"max_model_len ({max_model_len}) is greater than the derived 4096")
"""


def test_jupyter_traceback(tmp_path: Path) -> None:
    """IPython's own traceback of a cell (what Jupyter and Colab show): the class before the
    header, `Cell In[1], line 3`, `File /x/serve.py:4, in check(max_model_len)`, numbered
    source lines with an arrow, and the cause chained to the error of the cell."""
    pytest.importorskip("IPython", reason="IPython comes with the test extra")
    (tmp_path / "serve.py").write_text(SERVE)
    (tmp_path / "cell.py").write_text(IPYTHON_PROGRAM)
    run = subprocess.run(
        [sys.executable, "cell.py"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert "Traceback (most recent call last)\nCell In[1], line 3" in run.stdout
    cause, error = parse_exceptions(run.stdout)
    assert (cause.error_class, cause.message) == (
        "ValueError",
        "max_model_len (8192) is greater than the derived 4096",
    )
    assert [(f.file.rpartition("/")[2], f.line, f.function) for f in cause.frames] == [
        ("Cell In[1]", 3, ""),
        ("serve.py", 4, "check"),
    ]
    assert cause.frames[-1].source.startswith("raise ValueError(")
    assert (error.error_class, error.message) == (
        "RuntimeError",
        "Engine core initialization failed.",
    )
    assert (error.cause_index, error.cause_kind) == (cause.index, "cause")


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: Invalid chat message {'message': 'hi', 'role': 'user'}",
        '{"level": "info", "message": "Started server process", "pid": 1}',
    ],
    ids=["a dict in a message", "a structured log line"],
)
def test_a_dict_with_a_message_key_is_no_error_body(text: str) -> None:
    found = parse_exceptions(text + "\nINFO:     Waiting for application startup.\n")
    assert [(e.error_class, e.message) for e in found] == (
        [("ValueError", text.partition(": ")[2])] if text.startswith("ValueError") else []
    )


WRAPPED_AT_120 = (
    '(EngineCore pid=316)   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/core/kv_ca'
    'che_utils.py", line 758, in _check_kv\n'
    "(EngineCore pid=316)     raise ValueError(\n"
    "(EngineCore pid=316) ValueError: To serve at least one request with the model's max seq"
    " len (100000), (4.26 GiB KV cach\n"
    "e is needed, which is larger than the available KV cache memory (4.25 GiB).\n"
)


def test_a_log_prefixed_message_a_terminal_wrapped_is_read_whole() -> None:
    """A process's log line cut at the terminal's width goes on, mid-word, on a line without
    the prefix: the message is read joined, in the process's stream; a short line's next
    line without the prefix is no part of it, nor is a traceback's header."""
    [exception] = parse_exceptions(WRAPPED_AT_120)
    assert exception.message.endswith(
        "(4.26 GiB KV cache is needed, which is larger than the "
        "available KV cache memory (4.25 GiB)."
    )
    assert exception.frames[-1].line == 758
    short = "(EngineCore pid=316) ValueError: bad value\nI ran it twice.\n"
    assert parse_exceptions(short)[0].message == "bad value"
    header = WRAPPED_AT_120.replace("e is needed", "Traceback (most recent call last):\ne is")
    assert "Traceback" not in parse_exceptions(header)[0].message
