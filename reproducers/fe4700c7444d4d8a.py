"""Reproducer for record fe4700c7444d4d8a: "Distributed package doesn't have NCCL built in".

init_process_group checks is_nccl_available() before it builds an NCCL group, and the
CPU-only torch that the reproducers pin (like every Windows and macOS wheel) has no NCCL.
The trigger asks for the NCCL backend, as training scripts written for Linux GPU servers
do. The fix picks the backend from what the build has: gloo here, and
the group works (an all_reduce over a group of one).

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "fe4700c7444d4d8a"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.distributed.distributed_c10d",
    classes=(),
)
DEVICES = ("cpu",)


def _init(module: ModuleType, backend: str) -> None:
    """A group of one over an in-memory store: no port, no environment variables."""
    from torch.distributed import HashStore

    module.init_process_group(backend=backend, store=HashStore(), rank=0, world_size=1)


def trigger(module: ModuleType, _device: str) -> None:
    """NCCL asked of a build without it."""
    try:
        _init(module, "nccl")
    finally:
        if module.is_initialized():
            module.destroy_process_group()


def fix(module: ModuleType, _device: str) -> dict:
    """The backend chosen from what the build has."""
    import torch

    nccl = torch.cuda.is_available() and module.is_nccl_available()
    backend = "nccl" if nccl else "gloo"
    _init(module, backend)
    try:
        value = torch.ones(2) * 3
        module.all_reduce(value)
        require(value.tolist() == [3.0, 3.0], f"all_reduce gave {value.tolist()}")
        chosen = module.get_backend()
    finally:
        module.destroy_process_group()
    require(chosen == backend, f"the group uses {chosen}, not {backend}")
    return {"nccl_available": module.is_nccl_available(), "backend": chosen, "all_reduce": 3.0}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
