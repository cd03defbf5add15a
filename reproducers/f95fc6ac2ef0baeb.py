"""Reproducer for record f95fc6ac2ef0baeb: "Cannot re-initialize CUDA in forked subprocess. To use
CUDA with multiprocessing, you must use the 'spawn' start method".

torch marks a process forked from a parent that had initialised CUDA, and
torch.cuda._lazy_init raises there on the child's first CUDA use. The trigger initialises
CUDA and forks, as multiprocessing does by default on Linux; the forked child goes on as the
reproducer (the parent only waits for it and exits with its status), so the error is raised
in this process, with torch's own frames, by the child's first CUDA computation.
The fix, run in that same forked child, maps the computation over a pool from the spawn
context: each worker starts a fresh interpreter, initialises CUDA itself, and the results
come back.

Needs CUDA: the CPU-only build of torch cannot re-initialise what it does not have (its
bad-fork check is always false), so the script declares the cuda device only.
"""

import multiprocessing
import os
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "f95fc6ac2ef0baeb"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.cuda",
    classes=(),
)
DEVICES = ("cuda",)
INPUTS = [1.0, 2.0, 3.0]


def double_on_gpu(value: float) -> float:
    """A worker's CUDA computation (module level, so spawned workers can import it)."""
    import torch

    return (torch.tensor([value], device="cuda") * 2).item()


def _initialise_cuda_here(module: ModuleType) -> None:
    module.init()
    require(module.is_initialized(), "CUDA is not initialised in the parent")


def trigger(module: ModuleType, _device: str) -> None:
    """CUDA initialised here, then a fork; the child makes the first CUDA call."""
    _initialise_cuda_here(module)
    child = os.fork()
    if child:  # the parent: the child reports the result and its exit status is ours
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status))
    double_on_gpu(1.0)


def fix(_module: ModuleType, _device: str) -> dict:
    """A pool from the spawn context: fresh workers initialise CUDA themselves."""
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(double_on_gpu, INPUTS)
    require(results == [2 * value for value in INPUTS], f"the workers returned {results}")
    return {"context": "spawn", "results": results}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
