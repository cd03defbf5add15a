"""Reproducer for record c37c5b9c078ab2ce: "Free memory on device {device} ({free}/{total} GiB)
on startup is less than desired GPU memory utilization ({utilization}, {requested} GiB). ...".

Each GPU worker takes a memory snapshot of its device when it starts and calls
`request_memory(init_snapshot, cache_config)`, which asks for `ceil(total_memory *
gpu_memory_utilization)` bytes and raises when the device's free memory is already below
that. The trigger is the threads' situation: an 80 GB GPU of which another process holds
about 50 GiB (29.6 of 79.32 GiB free), and `--gpu-memory-utilization 0.9`. The fix derives
the utilization from the free share, less a margin of 0.05: the same snapshot then passes and
the requested memory fits in what is free.

The snapshot is a real `MemorySnapshot` made with `auto_measure=False` and the two figures
the check reads set (a CPU has no device to measure); the CacheConfig is real.
"""

import math
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "c37c5b9c078ab2ce"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.v1.worker.utils",
    classes=("MemorySnapshot", "CacheConfig"),
    requirements=True,
)
DEVICES = ("cpu",)
GIB = 1 << 30
TOTAL = int(79.32 * GIB)  # an 80 GB GPU as CUDA reports it
FREE = int(29.6 * GIB)  # another process holds the rest
MARGIN = 0.05


def _snapshot() -> object:
    from vllm.utils.mem_utils import MemorySnapshot

    return MemorySnapshot(device="cuda:0", auto_measure=False, free_memory=FREE, total_memory=TOTAL)


def _cache_config(utilization: float) -> object:
    from vllm.config import CacheConfig

    return CacheConfig(gpu_memory_utilization=utilization)


def trigger(module: ModuleType, _device: str) -> None:
    """--gpu-memory-utilization 0.9 on a GPU another process half fills."""
    module.request_memory(_snapshot(), _cache_config(0.9))


def fix(module: ModuleType, _device: str) -> dict:
    """The utilization taken from the free share, less a margin."""
    snapshot = _snapshot()
    utilization = math.floor((snapshot.free_memory / snapshot.total_memory - MARGIN) * 100) / 100
    requested = module.request_memory(snapshot, _cache_config(utilization))
    require(requested <= snapshot.free_memory, f"{requested} bytes asked, {FREE} free")
    require(utilization == 0.32, f"picked --gpu-memory-utilization {utilization}")
    return {"utilization": utilization, "requestedGiB": round(requested / GIB, 2)}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
