"""Tests for app.matching.logtext: noise removed, offsets kept, processes told apart."""

import re
import traceback

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.matching.logtext import _ANY_PREFIX, _ENTITIES, MAX_PREFIXES, CleanLine, clean_lines


def real_traceback() -> str:
    """A traceback Python printed for code that really failed."""

    def load(config: dict[str, int], key: str) -> int:
        return config[key]

    try:
        load({}, "max_model_len")
    except KeyError as error:
        return "".join(traceback.format_exception(error))
    raise AssertionError("load() did not fail")


def originals(text: str, line: CleanLine) -> str:
    """The original characters each clean character maps back to; where an HTML escape
    begins (a paste copied out of a web page's source: `&#34;`), the character it stands
    for."""
    return "".join(_original(text, line.offset(index)) for index in range(len(line.text)))


def _original(text: str, at: int) -> str:
    escape = next((escape for escape in _ENTITIES if text.startswith(escape, at)), None)
    return text[at] if escape is None else _ENTITIES[escape]


KNOWN_PREFIXES = [
    ("2026-08-14 12:00:01,123 ERROR boom", "boom", ""),
    ("2026-08-14 12:00:01,123 - ERROR - boom", "boom", ""),
    ("INFO 08-14 12:00:01 [core.py:710] boom", "boom", ""),
    ("[2026-08-14T12:00:01.123Z] boom", "boom", ""),
    ("[2026-08-14 12:00:01 DP0 TP1] boom", "boom", ""),
    ("2026-08-14T12:00:01.123456789Z stderr F boom", "boom", ""),
    ("E1114 12:00:01.123456 1234 file.cc:12] boom", "boom", ""),
    ("[W reducer.cpp:1300] boom", "boom", ""),
    # torch.compile's: level letter V for DEBUG, the compile id, the artifact
    ("W1021 10:44:18.989000 2926727 torch/_dynamo/convert_frame.py:1355] [0/8] boom", "boom", ""),
    ("V0812 15:05:52.194000 18 symbolic_convert.py:556] [4/0] [__graph_breaks] boom", "boom", ""),
    ("[0/8_1] boom", "boom", ""),
    (
        "W0810 18:28:53.521000 10244 site-packages\\torch\\_dynamo\\x.py:964] [2/256] boom",
        "boom",
        "",
    ),
    ("ERROR: boom", "boom", ""),
    ("ERROR:root:boom", "boom", ""),
    ("[ERROR] boom", "boom", ""),
    (
        "(EngineCore_DP0 pid=1234) ERROR 08-14 12:00:01 [core.py:710] boom",
        "boom",
        "EngineCore_DP0 pid=1234",
    ),
    ("[rank0]: boom", "boom", "rank0"),
    ("[rank12]:boom", "boom", "rank12"),
    ("(RayWorkerWrapper pid=5678) boom", "boom", "RayWorkerWrapper pid=5678"),
    (
        "(RayWorkerWrapper pid=5678, ip=10.0.0.7) [rank1]: INFO 08-14 12:00:01 [w.py:1] boom",
        "boom",
        "RayWorkerWrapper pid=5678, ip=10.0.0.7 rank1",
    ),
    ("(VllmWorker rank=0 pid=99) boom", "boom", "VllmWorker rank=0 pid=99"),
    # vLLM before 0.7, docker compose, journald, quoted replies
    ("ERROR 12-05 20:24:46 engine.py:366] boom", "boom", ""),
    (
        "(VllmWorkerProcess pid=8) ERROR 12-05 20:24:46 multiproc_worker_utils.py:120] boom",
        "boom",
        "VllmWorkerProcess pid=8",
    ),
    ("vllm-1  | boom", "boom", "vllm-1"),
    ("project_sglang_1 | boom", "boom", "project_sglang_1"),
    # a compose service's own container_name, without compose's index
    ("gemma-vllm-server  | boom", "boom", "gemma-vllm-server"),
    ("sglang  | boom", "boom", "sglang"),
    ("ERROR | boom", "boom", ""),  # a level, not a container
    ("Aug 19 18:34:30 gpu-host vllm[8707]: boom", "boom", "vllm[8707]"),
    ("Dec  1 08:04:30 host python3[12]: boom", "boom", "python3[12]"),
    ("2026-08-19T18:34:30+0000 gpu-host vllm[8707]: boom", "boom", "vllm[8707]"),
    ("> boom", "boom", ""),
    ("> > boom", "boom", ""),
    ("> [rank3]: boom", "boom", "rank3"),
    ("vllm-1  | ERROR 12-05 20:24:46 engine.py:366] boom", "boom", "vllm-1"),
    # a tool relaying its child's streams
    ("[training STDERR] boom", "boom", "training STDERR"),
    # the tags of an issue title from the projects' issue templates
    ("[Bug] boom", "boom", ""),
    ("[Bug]: boom", "boom", ""),
    ("[Bug][V1]: boom", "boom", ""),
    ("[Usage]: boom", "boom", ""),
]
"""(raw line, its text, its stream): a line in each prefix shape."""


@pytest.mark.parametrize(("raw", "text", "stream"), KNOWN_PREFIXES)
def test_known_prefixes_are_stripped(raw: str, text: str, stream: str) -> None:
    (line,) = clean_lines(raw)
    assert (line.text, line.stream) == (text, stream)
    assert raw[line.start : line.end] == text
    assert line.prefix == raw[: -len(text)]


@pytest.mark.parametrize("indent", [" ", "\t"])
def test_no_prefix_begins_with_whitespace(indent: str) -> None:
    """An indented line is looked at for no prefix (most lines of a traceback): for that to
    change nothing, no shape may match at an indent."""
    for raw, _, _ in KNOWN_PREFIXES:
        (line,) = clean_lines(indent + raw)
        assert (line.text, line.prefix) == (indent + raw, ""), raw
        assert _ANY_PREFIX.match(indent + raw) is None, raw


@pytest.mark.parametrize(
    "raw",
    [
        "[Errno 2] No such file or directory",
        "[8] and [a/b] are no compile ids",
        "[1/2 done] not a compile id either",
        "[core.py:710] not after a level",
        "(not a process tag) text",
        "[rank0] no colon",
        "[training] not a stream",
        "[sgl_kernel] CRITICAL: a tag that is no issue template's",
        "Information: INFO is not a level here",
        "error: lower-case words are messages",
        "08-14 12:00:01 a date alone",
        '  File "x.py", line 3, in f',
        "value | not a container",
        "host vllm[8707]: no date before it",
    ],
)
def test_message_text_is_kept(raw: str) -> None:
    (line,) = clean_lines(raw)
    assert (line.text, line.prefix, line.stream) == (raw, "", "")


def test_indentation_after_a_prefix_is_kept() -> None:
    (line,) = clean_lines('[rank0]:   File "x.py", line 3, in f')
    assert line.text == '  File "x.py", line 3, in f'


def test_stacked_prefixes_stop_at_the_limit() -> None:
    raw = "[rank0]: " * (MAX_PREFIXES + 2) + "boom"
    (line,) = clean_lines(raw)
    assert line.text == "[rank0]: " * 2 + "boom"


def test_line_ends() -> None:
    text = "one\r\ntwo\rthree\nfour\r\n"
    lines = clean_lines(text)
    assert [line.text for line in lines] == ["one", "two", "three", "four", ""]
    assert [line.line_no for line in lines] == [0, 1, 2, 3, 4]
    assert [text[line.start : line.end] for line in lines] == ["one", "two", "three", "four", ""]


def test_colour_codes_are_removed_and_offsets_kept() -> None:
    text = (
        "\x1b[1;31mERROR\x1b[0m 08-14 12:00:01 [core.py:710] "
        "\x1b[31mValueError\x1b[0m: \x1b]8;;http://x\x07bad\x1b]8;;\x07 value\x1b[0m"
    )
    (line,) = clean_lines(text)
    assert line.text == "ValueError: bad value"
    assert originals(text, line) == line.text
    start, end = line.span(12, 21)
    assert re.sub(r"\x1b\[[0-9;]*m|\x1b\]8;;[^\x07]*\x07", "", text[start:end]) == "bad value"
    assert text[end:] == "\x1b[0m"
    assert line.span(0, 10) == (text.index("ValueError"), text.index("ValueError") + 10)


def test_real_traceback_in_interleaved_processes() -> None:
    body = real_traceback().splitlines()
    one = [f"(EngineCore_DP0 pid=1234) ERROR 08-14 12:00:01 [core.py:710] {line}" for line in body]
    two = [f"(EngineCore_DP1 pid=1235) ERROR 08-14 12:00:01 [core.py:710] {line}" for line in body]
    text = "\n".join(line for pair in zip(one, two, strict=True) for line in pair)
    lines = clean_lines(text)
    for stream in ("EngineCore_DP0 pid=1234", "EngineCore_DP1 pid=1235"):
        assert [line.text for line in lines if line.stream == stream] == body
    assert all(text[line.start : line.end] == line.text for line in lines)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "\x1b[31m",
                "\x1b[0m",
                "\x1b]8;;x\x07",
                "\x9b1m",
                "\x1b",
                "\r",
                "\n",
                "\r\n",
                "[rank0]: ",
                "(EngineCore_DP0 pid=1234) ",
                "ERROR 08-14 12:00:01 [core.py:710] ",
                "2026-08-14 12:00:01,123 ",
                "INFO ",
            ]
        )
        | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20),
        max_size=30,
    ).map("".join)
)
def test_every_clean_character_maps_back(text: str) -> None:
    lines = clean_lines(text)
    assert len(lines) == len(re.split(r"\r\n|\r|\n", text))
    previous_end = 0
    for line in lines:
        assert originals(text, line) == line.text
        assert previous_end <= line.start <= line.end <= len(text)
        assert line.span(0, len(line.text)) == (line.start, line.end)
        assert "\r" not in line.text
        assert "\n" not in line.text
        previous_end = line.end


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("```", ""),
        ("```python", ""),
        ("```text  ", ""),
        ("```ValueError: boom```", "ValueError: boom"),
        ("`ValueError: boom`", "ValueError: boom"),
        ("`ERROR 05-08 21:27:27 [serving_chat.py:198] ValueError: boom`", "ValueError: boom"),
        ("`ValueError: set `max_model_len` lower`", "ValueError: set `max_model_len` lower"),
        ("second line of a code span`", "second line of a code span"),
        ("> ```", ""),
        # https://github.com/hiyouga/LlamaFactory/issues/3674: emphasis around the line
        ("**_ValueError: boom_**", "ValueError: boom"),
        ("**ValueError: boom**", "ValueError: boom"),
        (
            "│ /x/vllm/config.py:120 in __init__                    │",
            "/x/vllm/config.py:120 in __init__",
        ),
        (
            "2025-04-15 10:15:22,015 xinference.api.restful_api 48577 ERROR    "
            "[address=10.8.9.17:34697, pid=141952] boom",
            "boom",
        ),
        # https://github.com/vllm-project/vllm/issues/4062: Ray's deduplication note
        (
            "(RayWorkerVllm pid=2190572) ERROR 04-14 06:12:53 ray_utils.py:50]     "
            "pynccl_utils.init_process_group( [repeated 6x across cluster]",
            "    pynccl_utils.init_process_group(",
        ),
        (
            "(pid=53827) FutureWarning: Using `TRANSFORMERS_CACHE` is deprecated. [repeated 4x "
            "across cluster] (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable "
            "log deduplication.)",
            "FutureWarning: Using `TRANSFORMERS_CACHE` is deprecated.",
        ),
    ],
)
def test_markup_around_a_line_is_removed(raw: str, text: str) -> None:
    """Markdown fences and code spans, rich's box borders, xinference's and Ray's additions
    : the text is what Python printed, still mapped to its place in the paste."""
    (line,) = clean_lines(raw)
    assert line.text == text
    assert raw[line.start : line.end] == text


@pytest.mark.parametrize(
    "raw",
    [
        "`max_model_len` must be at least 1",  # a code span opening a message stays
        "Try increasing `gpu_memory_utilization`",
        "``double ticks``",
        "value │ not a rich box",
        "[repeated 6x across cluster] at the start",
        "**bold** at the start only",
        "*args, **kwargs",
        "__init__",
    ],
)
def test_markup_inside_a_message_is_kept(raw: str) -> None:
    (line,) = clean_lines(raw)
    assert line.text == raw


def test_html_escapes_are_read_and_offsets_kept() -> None:
    """https://github.com/xorbitsai/inference/issues/3785: a traceback copied out of a web
    page keeps its escapes (`File &quot;...&quot;`); each reads as its character, mapped
    back to where its escape begins."""
    text = "  File &quot;/x/vllm/engine/llm_engine.py&quot;, line 2010, in f &lt;&amp;&#39;&gt;"
    (line,) = clean_lines(text)
    assert line.text == '  File "/x/vllm/engine/llm_engine.py", line 2010, in f <&\'>'
    escapes = [line.offset(index) for index, char in enumerate(line.text) if char in "\"<&'>"]
    assert [text[at] for at in escapes] == ["&"] * 6
    assert originals(text, line) == line.text
    assert line.span(0, len(line.text)) == (0, text.rindex("&") + 1)
    (plain,) = clean_lines("R&D: a & b &quotx")
    assert plain.text == "R&D: a & b &quotx"
