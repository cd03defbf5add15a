"""Reproducer for record 08fb511a8bb549e2: "The NVIDIA driver on your system is too old (found
version {version}). ...".

The threads' case is a driver that supports an older CUDA than the torch wheel was built
for. A GPU machine shows it in a worker process whose loader finds a stand-in driver first:
`libcuda.so.1`, compiled here with the machine's C compiler, whose `cuDriverGetVersion`
reports CUDA 9.0 (9000), in a folder put first on `LD_LIBRARY_PATH`. The worker's
`torch.cuda.init()` raises; its RuntimeError comes back to this process. The fix is the same
worker with the real driver. Without a C compiler the run is skipped.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "08fb511a8bb549e2"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=())
DEVICES = ("cuda",)
OLD_DRIVER = "int cuDriverGetVersion(int *version) { *version = 9000; return 0; }\n"


def init_cuda() -> int:
    """What a training script does first: initialise CUDA and count the GPUs."""
    import torch

    torch.cuda.init()
    return torch.cuda.device_count()


def in_worker(library_dir: str | None) -> int:
    """init_cuda in a fresh process, `library_dir` first on its LD_LIBRARY_PATH."""
    import multiprocessing
    import os

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


def no_compiler(_module: ModuleType, _device: str) -> str | None:
    """The stand-in driver is compiled here: without `cc` the run cannot show the error."""
    return None if shutil.which("cc") else "no C compiler (cc) to build the stand-in driver"


def trigger(_module: ModuleType, _device: str) -> None:
    """A driver reporting CUDA 9.0 found before the real one."""
    folder = Path(tempfile.mkdtemp())
    (folder / "driver.c").write_text(OLD_DRIVER)
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(folder / "libcuda.so.1"), str(folder / "driver.c")],
        check=True,
    )
    in_worker(str(folder))


def fix(_module: ModuleType, _device: str) -> dict:
    """The same worker with the machine's driver."""
    count = in_worker(None)
    require(count >= 1, f"the worker sees {count} GPUs")
    return {"driver": "the machine's", "device_count": count}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, hardware=no_compiler))
