"""Reproducer for record ba464de49ccc4516: "CUDA error: {status} when calling `{call}`" (a
cuBLAS matrix product of `aten/src/ATen/cuda/CUDABlas.cpp`).

The threads' most common case: an embedding lookup with an id beyond the table fails
asynchronously (its device-side assert breaks the CUDA context), and the next cuBLAS product
reports it as `CUBLAS_STATUS_EXECUTION_FAILED`. The trigger runs in a fresh worker process:
one product first (the cuBLAS handle and the output's memory exist, so nothing but the
product's launch meets the broken context), then the bad lookup, a pause for its kernel to
fail, and the same product; the worker's RuntimeError comes back to this process. The fix
keeps the ids within the table.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import sys
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "ba464de49ccc4516"
TARGET = Target(package="torch", version="2.13.0", module="torch.nn.functional", classes=())
DEVICES = ("cuda",)
VOCABULARY = 10


def lookup_then_multiply(token: int) -> float:
    """A product, an embedding lookup of `token`, a pause, and the product again."""
    import torch
    import torch.nn.functional as F

    a = torch.ones(256, 256, device="cuda")
    (a @ a).sum().item()  # the handle, its workspace and the output's block now exist
    table = torch.ones(VOCABULARY, 256, device="cuda")
    F.embedding(torch.tensor([token], device="cuda"), table)
    time.sleep(1.0)  # the lookup's kernel has run (and failed) before the next launch
    return float((a @ a).sum())


def in_worker(token: int) -> float:
    """lookup_then_multiply in a fresh process (a broken context cannot be repaired)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(lookup_then_multiply, (token,))


def trigger(_module: ModuleType, _device: str) -> None:
    """A token id one past the table."""
    in_worker(VOCABULARY)


def fix(_module: ModuleType, _device: str) -> dict:
    """An id within the table: the product runs."""
    total = in_worker(VOCABULARY - 1)
    require(total == 256.0**3, f"the product summed to {total}")
    return {"token": VOCABULARY - 1, "num_embeddings": VOCABULARY, "sum": total}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
