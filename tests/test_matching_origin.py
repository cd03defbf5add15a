"""Tests for app.matching.origin: the repository a paste without frames came from."""

import pytest

from app.matching.logtext import clean_lines
from app.matching.origin import log_repos
from app.upstreams import SGLANG, TORCH, VLLM


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
