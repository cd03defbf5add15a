"""Benchmark of harvest: harvest time per release, drafts produced, database size.

Run by hand: `.venv/bin/python bench/bench_harvest.py [SPEC ...]` (default: vllm==0.33.0,
sglang==0.5.23, torch). Each release is harvested into its own fresh SQLite database, then
all of them into one, whose file is what `bench/bench_match.py --database` reads. The
downloads are cached first, so the figures are the walk, the drafts and the writes.

With `--older`, the older releases of ERRKB_OLDER_RELEASES are then harvested
into that combined database one after the other, as `errkb serve` does in the background:
the time, the drafts and locations each adds, and the database size after each.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from app.harvest import drafts
from app.store.engine import open_store, unit_of_work
from app.store.tables import Record, RecordLocation
from app.upstreams.release_cache import Upstream

RELEASES = Upstream(Settings().cache_dir)  # the upstream cache (ERRKB_CACHE_DIR)

DEFAULT_SPECS = ("vllm==0.33.0", "sglang==0.5.23", "torch")


def _harvest(database: Path, specs: list[str]) -> list[tuple[str, float, int, int]]:
    rows = []
    engine = open_store(Settings(database_url=f"sqlite:///{database}"))
    with unit_of_work(engine) as session:
        for spec in specs:
            release = drafts.resolve_release(spec, releases=RELEASES)
            started = time.perf_counter()
            result, counts = drafts.harvest_release(session, release)
            rows.append((spec, time.perf_counter() - started, result.files, counts.created))
    engine.dispose()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("specs", nargs="*", default=list(DEFAULT_SPECS))
    parser.add_argument("--keep", type=Path, help="also write the combined database here")
    parser.add_argument(
        "--older", action="store_true", help="then harvest the older releases into it too"
    )
    args = parser.parse_args()
    older = Settings().older_releases if args.older else []
    for spec in [*args.specs, *older]:
        drafts.resolve_release(spec, releases=RELEASES)  # download and unpack outside the timing
    print("| release | harvest s | files | drafts | database MB |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for spec in args.specs:
            database = Path(folder) / f"{spec.replace('=', '_')}.db"
            [(name, seconds, files, created)] = _harvest(database, [spec])
            size = database.stat().st_size / 1e6
            print(f"| {name} | {seconds:.1f} | {files} | {created} | {size:.0f} |")
        combined = args.keep or Path(folder) / "all.db"
        combined.unlink(missing_ok=True)
        rows = _harvest(combined, args.specs)
        seconds, files = sum(row[1] for row in rows), sum(row[2] for row in rows)
        total, size = sum(row[3] for row in rows), combined.stat().st_size / 1e6
        print(f"| all together | {seconds:.1f} | {files} | {total} | {size:.0f} |")
        if older:
            _harvest_older(combined, older)


def _harvest_older(database: Path, specs: list[str]) -> None:
    """Each older release into the combined store: what it adds, and the size after it."""
    print("\n| older release | harvest s | drafts added | locations added | database MB |")
    print("|---|---|---|---|---|")
    engine = open_store(Settings(database_url=f"sqlite:///{database}"))
    total = 0.0
    with unit_of_work(engine) as session:
        for spec in specs:
            before = session.execute(select(func.count()).select_from(RecordLocation)).scalar()
            started = time.perf_counter()
            _, counts = drafts.harvest_release(
                session, drafts.resolve_release(spec, releases=RELEASES)
            )
            seconds = time.perf_counter() - started
            total += seconds
            after = session.execute(select(func.count()).select_from(RecordLocation)).scalar()
            size = database.stat().st_size / 1e6
            print(
                f"| {spec} | {seconds:.1f} | {counts.created} | {after - before} | {size:.0f} |",
                flush=True,
            )
        drafts_total = session.execute(select(func.count()).select_from(Record)).scalar()
    engine.dispose()
    size = database.stat().st_size / 1e6
    print(f"| {len(specs)} older releases | {total:.1f} | {drafts_total} in all | | {size:.0f} |")


if __name__ == "__main__":
    main()
