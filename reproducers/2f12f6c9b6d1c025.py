"""Reproducer for record 2f12f6c9b6d1c025: "CUDA error: unspecified launch failure".

The threads' causes (a failing GPU, a driver that does not suit it) cannot be made on
purpose, so the trigger does what the CUDA runtime names as this error's kernel-side cause:
a kernel that stops with an exception. torch's jiterator compiles a one-line element-wise
kernel at run time (NVRTC) whose body executes a `trap` instruction; the next synchronising
call raises. The context is unusable afterwards, so the fix runs in a fresh process (a spawn
pool): the same kernel without the trap.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "2f12f6c9b6d1c025"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda.jiterator", classes=())
DEVICES = ("cuda",)
TRAPPING = 'template <typename T> T trapping(T x) { asm volatile("trap;"); return x; }'
DOUBLING = "template <typename T> T doubling(T x) { return x + x; }"


def run_kernel(code: str) -> list[float]:
    """A jiterator kernel from `code` over four ones, synchronised."""
    import torch

    kernel = torch.cuda.jiterator._create_jit_fn(code)
    values = kernel(torch.ones(4, device="cuda"))
    torch.cuda.synchronize()
    return values.tolist()


def trigger(_module: ModuleType, _device: str) -> None:
    """A kernel that traps."""
    run_kernel(TRAPPING)


def fix(_module: ModuleType, _device: str) -> dict:
    """The kernel without the trap, in a fresh process."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        values = pool.apply(run_kernel, (DOUBLING,))
    require(values == [2.0] * 4, f"the kernel gave {values}")
    return {"kernel": "doubling", "values": values, "process": "spawned"}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
