"""Reproducer for record 8ce26c639f5fd745: "process {i} terminated with exit code {code}".

ProcessContext.join raises ProcessExitedException when a child exited with a non-zero
status and left no traceback, which is what a worker that calls sys.exit itself does. The
trigger is the threads' case: each worker ends the process with status 1 once it finds its
run finished (here: after its last epoch). The fix returns from the worker instead: every
child exits 0 and join returns.

The processes start with fork to keep the run short; mp.spawn joins them with the same
ProcessContext.join.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "8ce26c639f5fd745"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.multiprocessing.spawn",
    classes=("ProcessContext",),
)
DEVICES = ("cpu",)
EPOCHS = 2


def run(_rank: int, exit_when_done: bool) -> None:
    """One worker: trains its epochs, then ends."""
    finished = sum(1 for _ in range(EPOCHS))
    if exit_when_done and finished == EPOCHS:
        sys.exit(1)  # the training script's own exit after the last epoch


def trigger(module: ModuleType, _device: str) -> None:
    """Workers that exit with status 1 when done."""
    module.start_processes(run, (True,), 2, start_method="fork")


def fix(module: ModuleType, _device: str) -> dict:
    """Workers that return when done."""
    context = module.start_processes(run, (False,), 2, join=False, start_method="fork")
    while not context.join():
        pass
    codes = [process.exitcode for process in context.processes]
    require(codes == [0, 0], f"exit codes {codes}")
    return {"nprocs": 2, "exitcodes": codes}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
