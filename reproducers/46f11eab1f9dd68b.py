"""Reproducer for record 46f11eab1f9dd68b: "No CUDA GPUs are available".

The threads' case: `CUDA_VISIBLE_DEVICES` hides every GPU from a process of a CUDA build of
torch (set empty here, as a script that names a GPU the machine lacks does). It must be set
before the process initialises CUDA, so the trigger runs in a fresh worker process (a spawn
pool) that sets it first; the worker's RuntimeError comes back to this process and is raised
here with the worker's traceback. The fix makes the worker's variable name a GPU that exists.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import os
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "46f11eab1f9dd68b"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=())
DEVICES = ("cuda",)


def init_cuda() -> int:
    """What a training script does first: initialise CUDA and count the GPUs."""
    import torch

    torch.cuda.init()
    return torch.cuda.device_count()


def _in_worker(visible: str) -> int:
    """init_cuda in a fresh process whose CUDA_VISIBLE_DEVICES is `visible`."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(
        1, initializer=os.environ.__setitem__, initargs=("CUDA_VISIBLE_DEVICES", visible)
    ) as pool:
        return pool.apply(init_cuda)


def trigger(_module: ModuleType, _device: str) -> None:
    """Every GPU hidden by an empty CUDA_VISIBLE_DEVICES."""
    _in_worker("")


def fix(_module: ModuleType, _device: str) -> dict:
    """CUDA_VISIBLE_DEVICES naming the first GPU."""
    count = _in_worker("0")
    require(count == 1, f"the worker sees {count} GPUs")
    return {"CUDA_VISIBLE_DEVICES": "0", "device_count": count}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
