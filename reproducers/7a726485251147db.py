"""Reproducer for record 7a726485251147db: "-- Process {i} terminated with the following error:".

torch.multiprocessing.spawn runs fn(i, *args) in each child; a child that raises writes its
traceback to an error file, and ProcessContext.join raises ProcessRaisedException in the
parent with that traceback. The trigger starts one process more than there are data shards,
so the last rank's lookup of its shard fails (as a rank past the number of GPUs does). The
fix starts one process per shard: every child exits 0 and each shard is read by its rank.

The processes start with fork to keep the run short; mp.spawn joins them with the same
ProcessContext.join.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "7a726485251147db"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.multiprocessing.spawn",
    classes=("ProcessContext",),
)
DEVICES = ("cpu",)
SHARDS = ["part-0", "part-1"]


def worker(rank: int, shards: list, results: object) -> None:
    """One rank: reads its own shard."""
    shard = shards[rank]
    results.put((rank, shard))


def _spawn(module: ModuleType, nprocs: int) -> list:
    import torch.multiprocessing as mp

    results = mp.get_context("fork").SimpleQueue()
    module.start_processes(worker, (SHARDS, results), nprocs, start_method="fork")
    return sorted(results.get() for _ in range(nprocs))


def trigger(module: ModuleType, _device: str) -> None:
    """One process more than there are shards."""
    _spawn(module, len(SHARDS) + 1)


def fix(module: ModuleType, _device: str) -> dict:
    """One process per shard."""
    read = _spawn(module, len(SHARDS))
    require(read == list(enumerate(SHARDS)), f"the ranks read {read}")
    return {"nprocs": len(SHARDS), "read": [shard for _, shard in read]}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
