"""Tests for app.matching.origin: the repository a paste without frames came from."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.matching import origin
from app.matching.logtext import clean_lines
from app.matching.origin import log_repos, log_versions
from app.upstreams import BY_REPO, SGLANG, TORCH, VLLM

VLLM_PROJECT = BY_REPO[VLLM]


@pytest.mark.parametrize(
    ("text", "repos"),
    [
        ("INFO 08-14 12:00:01 [core.py:710] Engine started", {VLLM}),
        ("ERROR 12-05 20:24:46 engine.py:366] ValueError: boom", {VLLM}),
        ("(EngineCore_DP0 pid=1234) ValueError: boom", {VLLM}),
        ("[2026-08-14 12:00:01 TP0] Scheduler hit an exception", {SGLANG}),
        ("sglang-1  | ValueError: boom", {SGLANG}),
        ("Aug 19 18:34:30 host vllm[8707]: ValueError: boom", {VLLM}),
        ("loading /usr/lib/python3/site-packages/torch/cuda/__init__.py", {TORCH}),
        ("2026-08-14 12:00:01,123 ERROR ValueError: boom", set()),
        ("ValueError: vllm is great", set()),
    ],
)
def test_log_format_and_paths_name_the_repo(text: str, repos: set[str]) -> None:
    assert log_repos(clean_lines(text)) == repos


@pytest.mark.parametrize(
    ("text", "versions"),
    [
        ("INFO 10-22 12:00:01 api_server.py:527] vLLM API server version 0.6.3", {VLLM: "0.6.3"}),
        (
            "INFO 01-01 12:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3.post1) "
            "with config: model='x'",
            {VLLM: "0.6.3.post1"},
        ),
        ("pip install sglang[all]==0.4.1.post7", {SGLANG: "0.4.1.post7"}),
        ("vllm                              0.5.4", {VLLM: "0.5.4"}),
        ("torch==2.13.0+cu128", {TORCH: "2.13.0"}),
        ("vllm 0.6 is slow", {}),  # prose, not a pip list row
        ("vllm==0.6.3 then vllm==0.7.1", {}),  # two releases name none
        ("python -m sglang.launch_server --host 0.0.0.0", {}),
    ],
)
def test_a_paste_names_the_release_it_came_from(text: str, versions: dict[str, str]) -> None:
    assert log_versions(clean_lines(text)) == versions


_NAMES = ["vllm", "sglang", "torch", "transformers"]
_PIECES = [
    *_NAMES,
    "/",
    " ",
    "  ",
    "\n",
    '"',
    "(",
    "`",
    "==",
    "[all]",
    "0.6.3",
    "x",
    "/a.py",
    ".py",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_names_are_found_as_the_leading_alternation_regex_finds_them(pieces: list[str]) -> None:
    """The name-anchored scan is a faster form of one regex: it finds the same names with
    the same tails, in the same order, for the requirements' and the paths' shapes."""
    text = "".join(pieces)
    names = "|".join(_NAMES)
    for before, tail in (
        (origin._PATH_BEFORE, origin._PATH_TAIL),
        (origin._REQUIREMENT_BEFORE, origin._REQUIREMENT_TAIL),
    ):
        regex = re.compile(rf"(?:^|[\s{re.escape(before)}])({names})(?:{tail.pattern})")
        expected = [(m[1], m.end()) for m in regex.finditer(text)]
        found = [
            (name, tail_match.end())
            for name, tail_match in origin._named(text, _NAMES, before, tail)
        ]
        assert found == expected


_BANNER_PIECES = [
    "vLLM ",
    "LLM ",
    "TensorRT-",
    "API server version ",
    "engine (",
    "version",
    ":",
    " ",
]
_BANNER_PIECES += ["v", "0.6.3", "0.8.5.post1", "x", "\n"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_BANNER_PIECES), max_size=20))
def test_the_vllm_banner_is_found_as_its_leading_alternation_finds_it(pieces: list[str]) -> None:
    """vLLM's version banner begins with the literal its three shapes share, for speed; it
    finds the versions that the alternation of the three shapes finds."""
    text = "".join(pieces)
    banner = VLLM_PROJECT.version_banner
    assert banner is not None
    shapes = re.compile(
        r"(?:vLLM API server version |LLM engine \(|vLLM version:? )" + origin._VERSION
    )
    assert [m["version"] for m in banner.finditer(text)] == [
        m["version"] for m in shapes.finditer(text)
    ]
