"""Benchmark of the drafts' explanations: what share of a release's drafts name a setting,
give advice or are reached from an entry point, what explaining costs harvest, and whether
every listed setting is defined.

Run by hand: `.venv/bin/python bench/bench_explain.py [SPEC ...]` (default: vllm==0.33.0,
sglang==0.5.23). CPU seconds (not wall) of the whole walk and of the explaining in it, so
that other work on the machine does not move the ratio. A setting counts as defined when its
source line declares it: `name:` for a field, `"NAME"` or `NAME =` for an environment
variable (declared or read by name), the parameter in its `def` line. The releases that
changed a site are told at read time from the store, so they are not counted here.
"""

import argparse
import re
import time
from pathlib import Path
from typing import Any

import app.harvest.extract as extract
from app.config import Settings
from app.harvest import drafts, harvest_tree
from app.upstreams.release_cache import Upstream

RELEASES = Upstream(Settings().cache_dir)  # the upstream cache (ERRKB_CACHE_DIR)
DEFAULT_SPECS = ("vllm==0.33.0", "sglang==0.5.23")


def _defined(root: Path, prefix: str, setting: dict[str, Any]) -> bool:
    source = setting["source"]
    path = root / source["filePath"].removeprefix(prefix)
    line = path.read_text(encoding="utf-8").split("\n")[source["lineNumber"] - 1].strip()
    name = setting["name"]
    if setting["kind"] == "env":
        return f'"{name}"' in line or f"'{name}'" in line or line.startswith(f"{name} =")
    if setting["kind"] == "parameter":
        return re.search(rf"(?<![\w.]){name}\s*(?:[:=,)]|$)", line) is not None
    return line.startswith(f"{name}:")


def measure(spec: str) -> str:
    release = drafts.resolve_release(spec, releases=RELEASES)
    spent = [0.0]
    # The walk calls the name extract imported: patching app.harvest.advice times nothing.
    explain_all = extract.add_explanations

    def timed(*args: Any, **kwargs: Any) -> None:
        start = time.process_time()
        explain_all(*args, **kwargs)
        spent[0] += time.process_time() - start

    extract.add_explanations = timed  # type: ignore[assignment]
    try:
        start = time.process_time()
        result = harvest_tree(
            release.root,
            repo=release.repo,
            ref=release.ref,
            analyzed_at="bench",
            path_prefix=release.path_prefix,
            package_dir=release.package_dir,
        )
        total = time.process_time() - start
    finally:
        extract.add_explanations = explain_all  # type: ignore[assignment]
    explained = [draft.context.get("explanation") or {} for draft in result.drafts]
    count = len(explained) or 1
    settings = sum(bool(e.get("settings")) for e in explained)
    advice = sum(bool(e.get("advice")) for e in explained)
    either = sum(bool(e.get("settings") or e.get("advice")) for e in explained)
    reached = sum(bool(e.get("entryPoints")) for e in explained)
    undefined = sum(
        not _defined(release.root, release.path_prefix, setting)
        for e in explained
        for setting in e.get("settings", [])
    )
    return (
        f"| {spec} | {len(result.drafts)} | {settings / count:.1%} | {advice / count:.1%} | "
        f"{either / count:.1%} | {reached / count:.1%} | {undefined} | "
        f"{total:.1f} / {spent[0]:.2f} ({total / (total - spent[0]):.2f}x) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("specs", nargs="*", default=list(DEFAULT_SPECS))
    args = parser.parse_args()
    for spec in args.specs:
        drafts.resolve_release(spec, releases=RELEASES)  # download and unpack first
    print(
        "| release | drafts | a setting | advice | either | entry points | undefined "
        "| CPU s harvest / explain |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.specs:
        print(measure(spec), flush=True)


if __name__ == "__main__":
    main()
