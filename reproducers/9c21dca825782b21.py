"""Reproducer for record 9c21dca825782b21: "CUDA error: {status} when calling
`cublasCreate(handle)`".

The threads' most common case: the GPU's memory is taken before the first matrix product, so
cuBLAS cannot create its handle (torch makes it lazily, per device and thread). The trigger
runs in a fresh worker process (no handle yet) that fills the GPU with tensors until the
allocator refuses even a small one, then multiplies two small matrices; the worker's
RuntimeError comes back to this process. The fix leaves a gigabyte free before the product.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "9c21dca825782b21"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=())
DEVICES = ("cuda",)
GIB = 1 << 30
MIB = 1 << 20


def fill_then_multiply(headroom: int) -> float:
    """Take all of the GPU's free memory but `headroom` (all there is when 0), then run the
    process's first matrix product."""
    import torch

    a = torch.ones(64, 64, device="cuda")
    held = []
    if headroom:
        free, _ = torch.cuda.mem_get_info()
        held.append(torch.empty(free - headroom, dtype=torch.uint8, device="cuda"))
    else:
        chunk = GIB
        while chunk >= MIB:
            try:
                held.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
            except torch.OutOfMemoryError:
                chunk //= 2
    return float((a @ a).sum())


def in_worker(headroom: int) -> float:
    """fill_then_multiply in a fresh process, whose CUDA context has no cuBLAS handle yet."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fill_then_multiply, (headroom,))


def trigger(_module: ModuleType, _device: str) -> None:
    """The GPU filled before the first product."""
    in_worker(0)


def fix(_module: ModuleType, _device: str) -> dict:
    """A gigabyte left free: the handle is created and the product runs."""
    total = in_worker(GIB)
    require(total == 64.0 * 64 * 64, f"the product summed to {total}")
    return {"headroom_bytes": GIB, "sum": total}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
