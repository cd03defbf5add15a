"""Reproducer for record 7921f04022ee6caf: "Watchdog caught collective operation timeout:
WorkNCCL(...) ran for {elapsed} milliseconds before timing out.".

A collective that does not finish within the group's timeout. The threads' cause is a rank
that never reaches it; one GPU can show the same check without a second rank: a NCCL group
of one whose all-reduce is queued behind a kernel that runs longer than the timeout
(`torch.cuda._sleep`). With `TORCH_NCCL_BLOCKING_WAIT=1` (set before the group is made) the
timeout is raised by `wait()` in this thread rather than by the watchdog taking the process
down. The fix gives the group a timeout longer than the wait.

Needs CUDA and NCCL: the script declares the cuda device only and is skipped elsewhere; it
has not yet run on a GPU.
"""

import datetime
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "7921f04022ee6caf"
TARGET = Target(
    package="torch", version="2.13.0", module="torch.distributed", classes=("ProcessGroupNCCL",)
)
DEVICES = ("cuda",)
SLEEP_CYCLES = 4_000_000_000  # about two seconds of a GPU's clock


def _all_reduce_behind_a_long_kernel(module: ModuleType, device: str, timeout_s: float) -> float:
    """A NCCL group of one, its all-reduce queued behind a long kernel; the reduced value."""
    import torch

    os.environ["TORCH_NCCL_BLOCKING_WAIT"] = "1"
    store = module.FileStore(str(Path(tempfile.mkdtemp()) / "store"), 1)
    module.init_process_group(
        "nccl",
        store=store,
        rank=0,
        world_size=1,
        timeout=datetime.timedelta(seconds=timeout_s),
        device_id=torch.device(device, 0),
    )
    try:
        tensor = torch.ones(1, device=device)
        torch.cuda._sleep(SLEEP_CYCLES)
        module.all_reduce(tensor, async_op=True).wait()
        return float(tensor.item())
    finally:
        torch.cuda.synchronize()
        module.destroy_process_group()


def trigger(module: ModuleType, device: str) -> None:
    """A timeout of half a second; the all-reduce waits about two."""
    _all_reduce_behind_a_long_kernel(module, device, 0.5)


def fix(module: ModuleType, device: str) -> dict:
    """A timeout longer than the wait: the all-reduce completes."""
    value = _all_reduce_behind_a_long_kernel(module, device, 60.0)
    require(value == 1.0, f"all-reduce of a group of one gave {value}")
    return {"timeout_s": 60.0, "world_size": 1, "reduced": value}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
