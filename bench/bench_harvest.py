"""Benchmark of issue 6: harvest time per release, drafts produced, database size.

Run by hand: `.venv/bin/python bench/bench_harvest.py [SPEC ...]` (default: vllm==0.33.0,
sglang==0.5.23, torch). Each release is harvested into its own fresh SQLite database, then
all of them into one, whose file is what `bench/bench_match.py --database` reads. The
downloads are cached first, so the figures are the walk, the drafts and the writes.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import drafts  # noqa: E402
from app.config import Settings  # noqa: E402
from app.db import open_store  # noqa: E402

DEFAULT_SPECS = ("vllm==0.33.0", "sglang==0.5.23", "torch")


def _harvest(database: Path, specs: list[str]) -> list[tuple[str, float, int, int]]:
    rows = []
    engine = open_store(Settings(database_url=f"sqlite:///{database}"))
    with Session(engine) as session:
        for spec in specs:
            release = drafts.resolve_release(spec)
            started = time.perf_counter()
            result, counts = drafts.harvest_release(session, release)
            rows.append((spec, time.perf_counter() - started, result.files, counts.created))
    engine.dispose()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("specs", nargs="*", default=list(DEFAULT_SPECS))
    parser.add_argument("--keep", type=Path, help="also write the combined database here")
    args = parser.parse_args()
    for spec in args.specs:
        drafts.resolve_release(spec)  # download and unpack outside the timing
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


if __name__ == "__main__":
    main()
