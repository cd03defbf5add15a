"""Reproducer for record c242f9ee2933e5bb: "Found no NVIDIA driver on your system. ...".

The threads' case is a CUDA build of torch where no NVIDIA driver loads (no GPU, a container
without the NVIDIA runtime). A GPU machine shows it in a worker process whose loader finds a
library without the driver's functions first under the driver's name: `libcuda.so.1` in a
folder put first on `LD_LIBRARY_PATH` (a copy of one of Python's own extension modules). The
CUDA runtime then finds no driver, and the worker's `torch.cuda.init()` raises; its
RuntimeError comes back to this process. The fix is the same worker with the real driver.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import _ctypes
import multiprocessing
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "c242f9ee2933e5bb"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=())
DEVICES = ("cuda",)


def init_cuda() -> int:
    """What a training script does first: initialise CUDA and count the GPUs."""
    import torch

    torch.cuda.init()
    return torch.cuda.device_count()


def in_worker(library_dir: str | None) -> int:
    """init_cuda in a fresh process, `library_dir` first on its LD_LIBRARY_PATH (read by
    the loader when the process starts, so it is set here before the worker is spawned)."""
    saved = os.environ.get("LD_LIBRARY_PATH")
    if library_dir is not None:
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [library_dir, saved]))
    try:
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            return pool.apply(init_cuda)
    finally:
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved


def trigger(_module: ModuleType, _device: str) -> None:
    """A `libcuda.so.1` without the driver's functions found before the real one."""
    folder = Path(tempfile.mkdtemp())
    shutil.copyfile(_ctypes.__file__, folder / "libcuda.so.1")
    in_worker(str(folder))


def fix(_module: ModuleType, _device: str) -> dict:
    """The same worker with the machine's driver."""
    count = in_worker(None)
    require(count >= 1, f"the worker sees {count} GPUs")
    return {"driver": "the machine's", "device_count": count}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
