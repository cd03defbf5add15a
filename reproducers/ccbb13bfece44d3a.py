"""Reproducer for record ccbb13bfece44d3a: "CUDA error: out of memory".

The threads' case: a GPU already full when a process needs memory outside torch's caching
allocator. This process fills the GPU through the allocator (blocks of 256 MiB until it
refuses), then a fresh worker process (a spawn pool) makes its first CUDA call: its CUDA
context cannot be created, and its error comes back to this process and is raised here with
the worker's traceback. The fix frees this process's memory (references dropped,
`empty_cache`) before the worker starts.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "ccbb13bfece44d3a"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=())
DEVICES = ("cuda",)
BLOCK_BYTES = 256 << 20
HELD: list = []  # the blocks that fill the GPU, kept until the fix frees them


def first_cuda_call() -> float:
    """What a new process does first on the GPU."""
    import torch

    return float(torch.ones(1, device="cuda").sum())


def _fill(module: ModuleType, device: str) -> None:
    import torch

    while True:
        try:
            HELD.append(torch.empty(BLOCK_BYTES, dtype=torch.uint8, device=device))
        except torch.OutOfMemoryError:
            break
    require(module.mem_get_info()[0] < BLOCK_BYTES, "the GPU still has free memory")


def _in_worker() -> float:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(first_cuda_call)


def trigger(module: ModuleType, device: str) -> None:
    """A fresh process's first CUDA call on a GPU this process has filled."""
    _fill(module, device)
    _in_worker()


def fix(module: ModuleType, _device: str) -> dict:
    """This process's memory freed before the worker starts."""
    HELD.clear()
    module.empty_cache()
    value = _in_worker()
    require(value == 1.0, f"the worker computed {value}")
    return {"freed": True, "free_bytes": module.mem_get_info()[0], "worker": value}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
