"""Harvest cost against a baseline harvester from git history, in one run.

Run by hand: `.venv/bin/python bench/bench_harvest_baseline.py [--baseline 83d5c8f] [SPEC ...]`
(default: torch, vllm==0.33.0, sglang==0.5.23). Loads the baseline's `app/harvest.py` from
git and times it against today's `app.harvest` (extraction, release-wide resolution and
code context) on the same unpacked release, alternating, in CPU seconds (the machine is
shared, so wall time is noise); prints the best of each and their ratio. Storing is timed
by bench_harvest.py.
"""

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import harvest
from app.config import Settings
from app.harvest import drafts
from app.upstreams.release_cache import Upstream

RELEASES = Upstream(Settings().cache_dir)  # the upstream cache (ERRKB_CACHE_DIR)

ROUNDS = 2


def _baseline(revision: str, folder: Path) -> ModuleType:
    """app/harvest.py as it was at `revision`, loaded as a module."""
    source = subprocess.run(
        ["git", "show", f"{revision}:app/harvest.py"], capture_output=True, text=True, check=True
    ).stdout
    path = folder / "baseline_harvest.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_harvest", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_harvest"] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("specs", nargs="*", default=["torch", "vllm==0.33.0", "sglang==0.5.23"])
    parser.add_argument("--baseline", default="83d5c8f", help="git revision with app/harvest.py")
    args = parser.parse_args()
    print("| release | baseline CPU s | drafts | now CPU s | drafts (located) | ratio |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        baseline = _baseline(args.baseline, Path(folder))
        for spec in args.specs:
            release = drafts.resolve_release(spec, releases=RELEASES)
            kwargs = {
                "repo": release.repo,
                "ref": release.ref,
                "analyzed_at": "2026-12-01T00:00:00.000Z",
                "path_prefix": release.path_prefix,
                "package_dir": release.package_dir,
            }
            best = {"baseline": float("inf"), "now": float("inf")}
            results = {}
            for _ in range(ROUNDS):
                for name, module in (("baseline", baseline), ("now", harvest)):
                    started = time.process_time()
                    results[name] = module.harvest_tree(release.root, **kwargs)
                    best[name] = min(best[name], time.process_time() - started)
            old, new = results["baseline"], results["now"]
            print(
                f"| {spec} | {best['baseline']:.1f} | {len(old.drafts)} | {best['now']:.1f} | "
                f"{len(new.drafts)} ({new.located}) | {best['now'] / best['baseline']:.2f} |"
            )


if __name__ == "__main__":
    main()
