"""Clean lines of a paste -> the upstream repositories its log format and paths point at.

Frames say which repository raised an exception (candidate.frame_repo). A paste without frames
still says where it came from: vLLM prefixes its lines `INFO 08-14 12:00:01
[core.py:710]` (before 0.7 without the bracket) and tags its processes `(EngineCore_DP0
pid=1)`, `(VllmWorker rank=0 pid=9)`; SGLang writes `[2026-08-14 12:00:01 TP0]`; a docker
compose service or a journald unit is often named after the server; and log lines name
source paths (`.../site-packages/vllm/...`). Two records with the same message in vLLM and in
SGLang are then told apart without frames.

A paste also names the release it came from, now and then: the server's banner (`vLLM API
server version 0.6.3`), a requirement (`sglang==0.4.1`) or a `pip list` row. The same
message raised from different files in different releases is then told apart by it.
"""

import re
from collections.abc import Iterator, Sequence

from app import upstreams
from app.matching.logtext import CleanLine

MAX_LINES = 2000  # the first lines of a long log say as much as all of them

_VERSION = r"v?(?P<version>[0-9]{1,3}\.[0-9]{1,4}(?:\.[0-9]{1,4})?(?:\.?post[0-9]{1,3})?)\b"
# `vllm==0.6.3`, `sglang[all]==0.4.1`, and `pip list`'s `vllm    0.6.3` (the name alone before
# two spaces or more: not prose's "vllm 0.6 is slow"): what follows a distribution's name.
_REQUIREMENT_TAIL = re.compile(r"(?:\[[\w,]{1,64}\])?(?:==| {2,64})" + _VERSION)
_REQUIREMENT_BEFORE = "\"'(`"  # or whitespace
# `.../site-packages/vllm/engine/llm_engine.py`: what follows a package's name in a path.
_PATH_TAIL = re.compile(r"/[\w./]{1,512}\.py\b")
_PATH_BEFORE = "/\"'("  # or whitespace
_DISTRIBUTIONS = [project.distribution for project in upstreams.UPSTREAMS]
_PACKAGES = [*upstreams.BY_PACKAGE, *upstreams.BUNDLED]  # SGLang's kernels name SGLang


def _named(
    text: str, names: list[str], before: str, tail: re.Pattern[str]
) -> Iterator[tuple[str, re.Match[str]]]:
    """The names found in `text` at its start or right after whitespace or a character of
    `before`, and followed by `tail` (with the tail's match); left to right, none
    overlapping the one before, a name earlier in `names` first at one place: what finditer
    of `(?:^|[<whitespace><before>])(<names>)<tail>` finds. Each occurrence of a name is found with
    str.find and tried once, where the regex tried its leading alternation at every
    character of the paste (docs/benchmarks.md, "Costs behind the code's choices")."""
    found = []
    for order, name in enumerate(names):
        at = text.find(name)
        while at >= 0:
            found.append((at, order, name))
            at = text.find(name, at + 1)
    free = 0  # where the last match ended: nothing before it is read again
    for at, _, name in sorted(found):
        if at != 0 and (at - 1 < free or not (text[at - 1].isspace() or text[at - 1] in before)):
            continue
        matched = tail.match(text, at + len(name))
        if matched is not None:
            free = matched.end()
            yield name, matched


def log_repos(lines: Sequence[CleanLine]) -> frozenset[str]:
    """The repositories that the log prefixes, process names and source paths name. Each
    pattern runs once over the lines joined (none crosses a line end), not once a line."""
    head = lines[:MAX_LINES]
    prefixes = "\n".join(line.prefix for line in head if line.prefix)
    streams = "\n".join(line.stream for line in head if line.stream)
    found = {
        project.repo
        for project in upstreams.UPSTREAMS
        if (prefixes and project.log_prefix and project.log_prefix.search(prefixes))
        or (streams and project.stream_names and project.stream_names.search(streams))
    }
    paths = "\n".join(line.text for line in head)
    for package, _ in _named(paths, _PACKAGES, _PATH_BEFORE, _PATH_TAIL):
        if (repo := upstreams.package_repo(package)) is not None:
            found.add(repo)
    return frozenset(found)


def log_versions(lines: Sequence[CleanLine]) -> dict[str, str]:
    """The release of each repository that the paste names (repository -> version), where it
    names one only: two versions of a project (a `pip list` beside a requirement) tell none."""
    found: dict[str, set[str]] = {}
    by_distribution = {project.distribution: project for project in upstreams.UPSTREAMS}
    text = "\n".join(line.prefix + line.text for line in lines[:MAX_LINES])
    for project in upstreams.UPSTREAMS:
        if project.version_banner:
            for banner in project.version_banner.finditer(text):
                found.setdefault(project.repo, set()).add(banner["version"])
    for name, named in _named(text, _DISTRIBUTIONS, _REQUIREMENT_BEFORE, _REQUIREMENT_TAIL):
        project = by_distribution[name]
        found.setdefault(project.repo, set()).add(named["version"])
    return {repo: versions.pop() for repo, versions in found.items() if len(versions) == 1}
