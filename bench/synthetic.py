"""Synthetic but schema-valid records for benchmarks, built from the curated ones."""

import copy
import json
import random
import re

from app.config import PROJECT_ROOT

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
