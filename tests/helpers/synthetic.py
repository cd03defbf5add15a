"""Synthetic but schema-valid records for benchmarks, built from the curated ones."""

import copy
import json
import random
import re
from datetime import date

from sqlalchemy import insert
from sqlmodel import Session

from app.config import PROJECT_ROOT
from app.curation.hits import retotal
from app.records import locations
from app.records import service as records
from app.store.tables import DatasetState, Hit

WORDS = (
    "buffer pool cache tensor shard rank worker engine request slot block page queue stream "
    "device kernel graph layer expert token batch prefill decode scheduler allocator"
).split()
REPOS = ("vllm-project/vllm", "sgl-project/sglang", "pytorch/pytorch")
CLASSES = ("RuntimeError", "ValueError", "AssertionError", "MemoryError", "KeyError")


def synthetic_records(count: int, seed: int = 7) -> list[dict]:
    """`count` distinct valid records: varied messages, repos, classes, tags and ids."""
    rng = random.Random(seed)
    bases = [
        json.loads(p.read_text())
        for p in sorted((PROJECT_ROOT / "data" / "records").glob("*.json"))
    ]
    records = []
    for n in range(count):
        record = copy.deepcopy(bases[n % len(bases)])
        words = rng.sample(WORDS, 6)
        message = f"{words[0].capitalize()} {words[1]} {words[2]} has no {words[3]} for {{value}}"
        record.update(
            id=f"{n:016x}",
            repo=REPOS[n % len(REPOS)],
            errorClass=CLASSES[n % len(CLASSES)],
            errorMessage=message,
            messagePattern=re.escape(message.replace("{value}", "@")).replace("@", "(.+?)")
            + f" #{n}",
            slug=re.sub(r"[^a-z0-9]+", "-", message[:50].lower()).strip("-"),
            tags=sorted({words[4], words[5], f"t{n % 100}"}),
            documentation=" ".join(rng.choices(WORDS, k=60)),
        )
        records.append(record)
    return records


SYNTHETIC_RELEASES = ("vllm==0.1.0", "vllm==0.2.0", "vllm==0.3.0")
FILES_PER_STORE = 40


def synthetic_paste(record: dict, value: str = "7") -> str:
    """A traceback whose last line one synthetic record (of `synthetic_records`) explains,
    raised at the record's own file and line."""
    message = record["errorMessage"].replace("{value}", value)
    number = int(record["id"], 16)
    return (
        "Traceback (most recent call last):\n"
        f'  File "/usr/lib/python3/site-packages/{record["filePath"]}", line '
        f"{record['lineNumber']}, in run\n"
        "    raise error\n"
        f"{record['errorClass']}: {message} #{number}\n"
    )


def fill_located_store(session: Session, count: int, seed: int = 7) -> list[dict]:
    """Store `count` synthetic drafts as a harvest would leave them, in the caller's unit of
    work: each in one of a few files, located in every release of SYNTHETIC_RELEASES but
    the last for every third record (its message changed there), hits on a few days. What
    the store-wide queries (history, related records, listings) see is then shaped like a
    harvested store of that size. Returns the records."""
    stored = synthetic_records(count, seed)
    for number, record in enumerate(stored):
        line = 100 + number
        start, end = record["sourceCodeStart"], record["sourceCodeEnd"]
        if start is not None and end is not None:
            # the source window moves with the line, so each record stays valid for a write
            shift = line - (record["lineNumber"] or start)
            record.update(sourceCodeStart=start + shift, sourceCodeEnd=end + shift)
        record.update(
            repo=REPOS[0],
            filePath=f"vllm/synthetic/module_{number % FILES_PER_STORE}.py",
            lineNumber=line,
        )
    records.write_records(session, stored, origin="harvest:vllm==0.3.0", review_state="draft")
    for release in SYNTHETIC_RELEASES:
        located = {
            record["id"]: locations.Location(
                release,
                "0" * 40,
                record["filePath"],
                record["lineNumber"],
                function=f"function_{number % 7}",
            )
            for number, record in enumerate(stored)
            if release != SYNTHETIC_RELEASES[-1] or number % 3
        }
        locations.put_release(session, release, located)
        session.merge(DatasetState(key=f"harvested:{release}", value="2026-12-01T00:00:00"))
    hits = [
        {"kind": "record", "subject": record["id"], "day": date(2026, 11, day), "count": day}
        for record in stored[:200]
        for day in (1, 2)
    ]
    session.execute(insert(Hit), hits)
    retotal(session, {(hit["kind"], hit["subject"]) for hit in hits}, set())
    records.bump_dataset_version(session)
    return stored
