"""Reproducer for record c53f6de81577a6bc: "Attempted to free more buffers than allocated".

vLLM's hf3fs CopyBufferAllocator only counts the buffers it handed out, so returning a
buffer list twice (or buffers of another pool) exceeds that count and raises. The fix frees
each acquired list exactly once and clears it, so a second free site returns nothing.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "c53f6de81577a6bc"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.distributed.kv_transfer.kv_connector.v1.hf3fs.utils.gather_scatter_helper",
    classes=("CopyBufferAllocator",),
)
DEVICES = ("cpu", "cuda")
POOL_SIZE = 4


def _pool(module: ModuleType, device: str) -> object:
    import torch

    return module.CopyBufferAllocator(torch.device(device), torch.float32, [8], POOL_SIZE)


def trigger(module: ModuleType, device: str) -> None:
    """An error path and a finally block both return the same buffer list."""
    pool = _pool(module, device)
    buffers = pool.alloc_buffer(2)
    pool.free_buffer(buffers)
    pool.free_buffer(buffers)


def trigger_two_pools(module: ModuleType, device: str) -> None:
    """Buffers of two pools returned to one of them in a single call."""
    first, second = _pool(module, device), _pool(module, device)
    second.free_buffer(first.alloc_buffer(2) + second.alloc_buffer(1))


def fix(module: ModuleType, device: str) -> dict:
    """The record's exampleFix: free once in finally, then clear the list."""
    pool = _pool(module, device)
    owned = {buffer.data_ptr() for buffer in pool._free_buffers}
    buffers = pool.alloc_buffer(2)
    try:
        for buffer in buffers:
            buffer.fill_(1.0)
    finally:
        pool.free_buffer(buffers)
        buffers = []
    pool.free_buffer(buffers)  # the second free site now returns nothing
    returned = {buffer.data_ptr() for buffer in pool._free_buffers}
    require(pool._inuse_count == 0, f"in-use count is {pool._inuse_count}, not 0")
    require(
        len(pool._free_buffers) == POOL_SIZE,
        f"{len(pool._free_buffers)} buffers in the free list, not {POOL_SIZE}",
    )
    require(returned == owned, "the free list does not hold exactly the pool's own buffers")
    return {"inuse_count": pool._inuse_count, "free_buffers": len(pool._free_buffers)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"two_pools": trigger_two_pools},
        )
    )
