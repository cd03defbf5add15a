"""Reproducer for record 397e41bb37848de3: "process {i} terminated with signal {name}".

ProcessContext.join raises ProcessExitedException when a spawned child died without a
Python traceback, here killed by a signal. The trigger is the threads' host-memory case:
each rank would load the whole dataset, more than the per-process budget, and is ended with
SIGKILL as the kernel's OOM killer ends it (the script sends the signal itself, standing in
for the kernel). The extra scenario is a child that aborts in native code (SIGABRT). The fix
gives each rank only its shard, within the budget: every child exits 0.

The processes start with fork to keep the run short; mp.spawn joins them with the same
ProcessContext.join.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import os
import signal
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "397e41bb37848de3"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.multiprocessing.spawn",
    classes=("ProcessContext",),
)
DEVICES = ("cpu",)
DATASET_ITEMS = 1000
BUDGET_ITEMS = 600  # what one process may hold before the OOM killer ends it


def worker(rank: int, nprocs: int, sharded: bool) -> None:
    """One rank loads the whole dataset, or only its shard."""
    items = DATASET_ITEMS // nprocs if sharded else DATASET_ITEMS
    if items > BUDGET_ITEMS:
        os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does
    data = list(range(rank, DATASET_ITEMS, nprocs))[:items]
    assert len(data) == items


def aborting_worker(_rank: int) -> None:
    """Native code that aborts (a C++ abort, a failed CUDA/NCCL assertion)."""
    os.abort()


def trigger(module: ModuleType, _device: str) -> None:
    """Every rank holds the whole dataset."""
    module.start_processes(worker, (2, False), 2, start_method="fork")


def trigger_abort(module: ModuleType, _device: str) -> None:
    """A rank aborting in native code."""
    module.start_processes(aborting_worker, (), 1, start_method="fork")


def fix(module: ModuleType, _device: str) -> dict:
    """Each rank holds only its shard."""
    context = module.start_processes(worker, (2, True), 2, join=False, start_method="fork")
    while not context.join():
        pass
    codes = [process.exitcode for process in context.processes]
    require(codes == [0, 0], f"exit codes {codes}")
    return {"nprocs": 2, "items_per_rank": DATASET_ITEMS // 2, "exitcodes": codes}


if __name__ == "__main__":
    sys.exit(
        main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"abort": trigger_abort})
    )
