"""Reproducer for record 7bfe411d3d58a9c0: "CUDA out of memory. Tried to allocate ...".

Raised by the CUDA caching allocator when neither its cache nor the driver can meet a
request. The process is capped with torch.cuda.set_per_process_memory_fraction at a small
share of what the GPU has free (so the run holds on an 8 GiB card and on a 141 GiB one, and
beside other users of the GPU); the trigger allocates a workload twice the cap at once, as
a too large batch or resolution asks for more than the card. The fix processes the same
workload in chunks small enough that each chunk and its reduction (a uint8 sum counts in
int64: eight bytes an item) stay within the cap, and gets the same result.

Needs CUDA: the allocator and the message exist only with a GPU, so the script declares the
cuda device only and is skipped elsewhere.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "7bfe411d3d58a9c0"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda.memory", classes=())
DEVICES = ("cuda",)
SHARE_OF_FREE = 0.02  # of the memory the GPU has free when the run starts
CHUNKS_PER_CAP = 16  # a chunk's int64 sum takes 8 bytes an item: half the cap at most


def _cap_bytes(module: ModuleType) -> int:
    """Cap this process at a share of the GPU's free memory; the cap in bytes."""
    import torch

    free, total = torch.cuda.mem_get_info(0)
    cap = int(free * SHARE_OF_FREE)
    module.set_per_process_memory_fraction(cap / total, 0)
    return cap


def trigger(module: ModuleType, device: str) -> None:
    """The whole workload at once: twice what the process may hold."""
    import torch

    items = 2 * _cap_bytes(module)
    torch.ones(items, dtype=torch.uint8, device=device).sum()


def fix(module: ModuleType, device: str) -> dict:
    """The same workload in chunks of a quarter of the cap."""
    import torch

    cap = _cap_bytes(module)
    items, chunk = 2 * cap, cap // CHUNKS_PER_CAP
    total, done = 0, 0
    while done < items:
        size = min(chunk, items - done)
        total += int(torch.ones(size, dtype=torch.uint8, device=device).sum())
        done += size
    torch.cuda.empty_cache()
    require(total == items, f"counted {total} of {items}")
    peak = module.max_memory_allocated(0)
    require(peak <= cap, f"peak {peak} bytes above the cap {cap}")
    return {"items": items, "chunk": chunk, "peak_within_cap": True}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
