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

from app import upstreams
from app.matching.logtext import CleanLine

MAX_LINES = 2000  # the first lines of a long log say as much as all of them

_PATH = re.compile(r"(?:^|[/\s\"'(])(" + "|".join(upstreams.BY_PACKAGE) + r")/[\w./]{1,512}\.py\b")


def log_repos(lines: Sequence[CleanLine]) -> frozenset[str]:
    """The repositories that the log prefixes, process names and source paths name."""
    found: set[str] = set()
    for line in lines[:MAX_LINES]:
        for project in upstreams.UPSTREAMS:
            if line.prefix and project.log_prefix and project.log_prefix.search(line.prefix):
                found.add(project.repo)
            if line.stream and project.stream_names and project.stream_names.search(line.stream):
                found.add(project.repo)
        for match in _PATH.finditer(line.text):
            found.add(upstreams.BY_PACKAGE[match[1]].repo)
    return frozenset(found)
