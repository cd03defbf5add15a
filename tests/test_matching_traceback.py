"""Tests for app.matching.traceback on tracebacks produced by running real code.

No traceback here is typed by hand: a module-scoped fixture writes a small package tree
(including stand-ins for ``torch`` and ``vllm.v1.engine.exceptions``, so the printed names are
module-qualified as Python prints them) and runs code that raises in a subprocess, capturing
``traceback.format_exc()``. The tests then wrap that output in the log noise seen in practice.
"""

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

from app.matching.traceback import (
    Frame,
    ParsedException,
    parse_exceptions,
)
from tests.helpers.hostile import pastes as hostile_pastes

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
    # issue 15: older vLLM, docker compose, journald, a quoted reply
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


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(max_examples=40, deadline=timedelta(seconds=20), derandomize=True)
@given(hostile_pastes())
def test_issue_10_hostile_pastes_parse_in_bounded_time(text: str) -> None:
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


def best_time(function: Callable[[], object]) -> float:
    """The least of three runs: the one least disturbed by whatever else the machine does."""
    times = []
    for _ in range(3):
        begin = time.perf_counter()
        function()
        times.append(time.perf_counter() - begin)
    return min(times)


def per_byte_growth(make: Callable[[int], str], small: int) -> float:
    """How much more each byte costs at ten times ``small`` bytes: about 1 when linear."""
    short, long = make(small), make(small * 10)
    return (best_time(lambda: parse_exceptions(long)) / len(long)) / (
        best_time(lambda: parse_exceptions(short)) / len(short)
    )


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
def test_time_is_linear_on_pathological_paste(piece: str) -> None:
    assert per_byte_growth(lambda size: piece * (size // len(piece)), 20_000) < 4


@pytest.mark.parametrize("scenario", ["nested_keyerror", "multiline", "qualified", "recursion"])
@pytest.mark.parametrize("style", ["plain", "vllm", "compose", "journald", "quoted"])
def test_frames_without_header(real: dict[str, str], scenario: str, style: str) -> None:
    """Issue 15: a paste from the middle of a log starts at a frame; frames still count."""
    lines = real[scenario].splitlines(keepends=True)
    first_frame = next(n for n, line in enumerate(lines) if line.lstrip().startswith('File "'))
    text = STYLES[style]("".join(lines[first_frame + 2 :]))
    (whole,) = parse_exceptions(real[scenario])
    (error,) = parse_exceptions(text)
    assert error.frames == whole.frames[1:]
    assert (error.qualified_class, error.message) == (whole.qualified_class, whole.message)
    assert error.has_traceback


def test_message_stops_at_the_next_record(real: dict[str, str]) -> None:
    """Issue 15: multiprocessing's "Process Process-3:" and a cut header are not message."""
    text = real["nested_keyerror"] + "Process Process-3:\nTraceback (most rec"
    (error,) = parse_exceptions(text)
    assert error.message == "'max_model_len'"


def test_paste_cut_in_a_word_is_no_exception(real: dict[str, str]) -> None:
    """Issue 15: frames, then a line the end of the paste cut: `eng` is no exception class."""
    lines = real["nested_keyerror"].splitlines(keepends=True)
    assert parse_exceptions("".join(lines[:-1]) + "eng") == []
    assert parse_exceptions("".join(lines[:-1]) + "eng\n")[0].error_class == "eng"
    cut_message = parse_exceptions("".join(lines[:-1]) + "KeyError: 'max_mo")
    assert [(e.error_class, e.message) for e in cut_message] == [("KeyError", "'max_mo")]
