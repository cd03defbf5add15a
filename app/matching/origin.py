"""Clean lines of a paste -> the upstream repositories its log format and paths point at.

Frames say which repository raised an exception (rank.frame_repo). A paste without frames
still says where it came from: vLLM prefixes its lines `INFO 08-14 12:00:01
[core.py:710]` (before 0.7 without the bracket) and tags its processes `(EngineCore_DP0
pid=1)`, `(VllmWorker rank=0 pid=9)`; SGLang writes `[2026-08-14 12:00:01 TP0]`; a docker
compose service or a journald unit is often named after the server; and log lines name
source paths (`.../site-packages/vllm/...`). Two records with the same message in vLLM and in
SGLang are then told apart without frames.
"""

import re
from collections.abc import Sequence

from app.matching.logtext import CleanLine

VLLM, SGLANG, TORCH = "vllm-project/vllm", "sgl-project/sglang", "pytorch/pytorch"
MAX_LINES = 2000  # the first lines of a long log say as much as all of them

_VLLM_PREFIX = re.compile(
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [0-9]{2}-[0-9]{2} [0-9:]{8}(?: \[?[\w.]+:[0-9]+\])?"
)
_SGLANG_PREFIX = re.compile(r"\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}(?: (?:TP|DP|PP|EP)[0-9]+)+\]")
_STREAM_NAMES = (
    (re.compile(r"vllm|enginecore|apiserver", re.IGNORECASE), VLLM),
    (re.compile(r"sglang|scheduler|detokenizer", re.IGNORECASE), SGLANG),
)
_PATH = re.compile(r"(?:^|[/\s\"'(])(vllm|sglang|torch)/[\w./]{1,512}\.py\b")
_PACKAGES = {"vllm": VLLM, "sglang": SGLANG, "torch": TORCH}


def log_repos(lines: Sequence[CleanLine]) -> frozenset[str]:
    """The repositories that the log prefixes, process names and source paths name."""
    found: set[str] = set()
    for line in lines[:MAX_LINES]:
        if line.prefix:
            if _VLLM_PREFIX.search(line.prefix):
                found.add(VLLM)
            if _SGLANG_PREFIX.search(line.prefix):
                found.add(SGLANG)
        for pattern, repo in _STREAM_NAMES:
            if line.stream and pattern.search(line.stream):
                found.add(repo)
        for match in _PATH.finditer(line.text):
            found.add(_PACKAGES[match[1]])
    return frozenset(found)
