"""Top-1 of the seed errors' real tracebacks on the default serve's store.

Run by hand: `.venv/bin/python bench/bench_seed_top1.py`. Builds the store `make serve` builds
(data/records imported, vllm==0.33.0 and sglang==0.5.23 harvested), in both orders, then
matches each seed error's real traceback, clean and under the log-noise variants of the
matching tests, and prints how often the curated record came first and what came instead.
"""

import sys
import tempfile
from collections import Counter
from pathlib import Path

from sqlmodel import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import PROJECT_ROOT, Settings
from app.harvest import drafts
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.records import service as records
from app.store.engine import open_store
from app.upstreams.release_cache import Upstream
from tests.helpers.real_errors import SEED_TRACEBACKS, noise_variants, program_traceback

RELEASES = Upstream(Settings().cache_dir)  # the upstream cache (ERRKB_CACHE_DIR)

DEFAULT_SPECS = ("vllm==0.33.0", "sglang==0.5.23")
DATA_DIR = PROJECT_ROOT / "data" / "records"


def _build(session: Session, import_first: bool) -> None:
    steps = [lambda: records.import_paths(session, [DATA_DIR])]
    steps += [
        lambda spec=spec: drafts.harvest_release(
            session, drafts.resolve_release(spec, releases=RELEASES)
        )
        for spec in DEFAULT_SPECS
    ]
    for step in steps if import_first else steps[1:] + steps[:1]:
        step()


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        other, _ = program_traceback(Path(folder))
        texts = {
            (record_id, name): text
            for record_id, make in SEED_TRACEBACKS.items()
            for name, text in noise_variants(make(), other).items()
        }
        print("| order | seed tracebacks | curated record first | top-1 instead |")
        print("|---|---|---|---|")
        for import_first in (True, False):
            database = Path(folder) / f"store-{import_first}.db"
            settings = Settings(database_url=f"sqlite:///{database}", cache_dir=Path(folder))
            with Session(open_store(settings)) as session:
                _build(session, import_first)
                matcher = Matcher(session.get_bind(), Path(folder), 1 << 20)
                instead: Counter[str] = Counter()
                for (record_id, _name), text in texts.items():
                    matches = match_text(matcher, session, text).matches
                    top = matches[0].id if matches else "nothing"
                    if top != record_id:
                        instead[f"{top} for {record_id}"] += 1
            right = len(texts) - sum(instead.values())
            order = "import, then harvest" if import_first else "harvest, then import"
            shown = ", ".join(f"{key} ×{n}" for key, n in instead.most_common()) or "—"
            print(f"| {order} | {len(texts)} | {right} ({right / len(texts):.0%}) | {shown} |")


if __name__ == "__main__":
    main()
