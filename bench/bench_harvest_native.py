"""Benchmark of the native harvest: CPU seconds of one release's harvest without and with its
native sites, in one process, and how many native drafts each source gives (each compiled
library apart: the installed build's and, for torch, its CUDA build's, whose read-only data
`resolve_release` downloads once into the cache, outside the timing, unless
ERRKB_CUDA_BUILD_LIBRARIES=false).

Run by hand: `.venv/bin/python bench/bench_harvest_native.py [SPEC ...]` (default: torch,
vllm==0.33.0). Both harvests read the same cached files one after the other, so the ratio
holds on a loaded machine where wall times do not; storing the drafts is not timed here
(`bench/bench_harvest.py` times the whole harvest, stored).
"""

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.harvest import Draft, drafts, harvest_tree
from app.upstreams.release_cache import Upstream

SETTINGS = Settings()
RELEASES = Upstream(SETTINGS.cache_dir, build_libraries=SETTINGS.cuda_build_libraries)


def _source(draft: Draft) -> str:
    if "library" in draft.context:
        return str(draft.context["library"]).rsplit("/", 1)[-1]
    path = draft.record["filePath"]
    return "csrc" if path.startswith("csrc/") else "headers"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("specs", nargs="*", default=["torch", "vllm==0.33.0"])
    args = parser.parse_args()
    print("| release | CPU s, Python only | CPU s, with native | ratio | native drafts by source |")
    print("|---|---|---|---|---|")
    for spec in args.specs:
        release = drafts.resolve_release(spec, releases=RELEASES)
        if release.build_skipped:
            print(f"{release.label}: build libraries not read: {release.build_skipped}")
        common = {
            "repo": release.repo,
            "ref": release.ref,
            "analyzed_at": "bench",
            "path_prefix": release.path_prefix,
            "package_dir": release.package_dir,
        }
        started = time.process_time()
        python = harvest_tree(release.root, **common)
        middle = time.process_time()
        both = harvest_tree(
            release.root,
            **common,
            native_root=release.native_root,
            build_root=release.build_root,
        )
        ended = time.process_time()
        native = both.drafts[len(python.drafts) :]
        sources = Counter(_source(draft) for draft in native)
        before, after = middle - started, ended - middle
        counts = ", ".join(f"{name} {count:,}" for name, count in sorted(sources.items()))
        print(
            f"| {release.label} | {before:.1f} | {after:.1f} | {after / before:.2f}x | {counts} |"
        )


if __name__ == "__main__":
    main()
