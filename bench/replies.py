"""The service's replies to every real paste, and the records a harvest stores, as files to
compare: run before and after a change meant to leave behaviour alone (a module cut, a move),
each with its own checkout, then `cmp` the files.

Run by hand, from the checkout under test:
`PYTHONPATH=. .venv/bin/python bench/replies.py OUT_DIR [--store STORE.db]`.
Without `--store` it builds one in OUT_DIR as tests/test_real_pastes.py does (the curated
records, then the accuracy store's releases and the older ones the pastes come from:
tests/helpers/accuracy.py) with this checkout's harvest, and writes every record of it to
OUT_DIR/records.jsonl in id order, as `errkb export` writes them. Then it posts
each case of both real-paste sets (tests/fixtures/real_pastes, dev and held-out) to
/api/match for its first three answers, and writes each whole reply to
OUT_DIR/replies.jsonl, one line per case in file-name order. With `--store` it answers
from a copy of that store, as the measure does with ERRKB_TEST_HISTORY_STORE, and writes
only the replies.

Both ways answer alike: the service that harvested the store and a service over a copy of
it in a fresh process gave the same 543 replies.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import PROJECT_ROOT
from app.records import service as records
from app.store.engine import unit_of_work
from tests.helpers import accuracy
from tests.helpers.real_pastes import HELDOUT_DIR, TOP, load_cases


def build_store(out: Path) -> accuracy.Harvested:
    """A store harvested as the real-paste measure's, with every record written out."""
    harvested = accuracy.harvested_store(
        out / "store",
        accuracy.HARVESTED + accuracy.OLDER,
        curated=PROJECT_ROOT / "data" / "records",
    )
    with (
        unit_of_work(harvested.client.app.state.services.engine) as session,
        (out / "records.jsonl").open("w", encoding="utf-8") as sink,
    ):
        sink.writelines(records.export_lines(session))
    return harvested


def write_replies(client: TestClient, out: Path) -> int:
    """Each case's whole reply to /api/match, one JSON line per case; the cases written."""
    cases = {f"dev/{name}": case for name, case in load_cases().items()}
    cases |= {f"heldout/{name}": case for name, case in load_cases(HELDOUT_DIR).items()}
    with (out / "replies.jsonl").open("w", encoding="utf-8") as sink:
        for name, case in cases.items():
            reply = client.post("/api/match", json={"text": case["paste"]}, params={"limit": TOP})
            body = {"case": name, "status": reply.status_code, "reply": reply.json()}
            sink.write(json.dumps(body, sort_keys=True) + "\n")
    return len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--store", type=Path, help="Answer from this SQLite store.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        if args.store is None:
            harvested = build_store(args.out)
        else:  # as tests/conftest.py's harvested_history serves ERRKB_TEST_HISTORY_STORE
            harvested = accuracy.harvested_store(Path(folder), (), start_from=args.store)
        written = write_replies(harvested.client, args.out)
    print(f"{written} replies written to {args.out / 'replies.jsonl'}")


if __name__ == "__main__":
    main()
