"""Reproducer for record 58588cf5c295bbff: "NCCL error in: {file}:{line}, {error}, NCCL version
{version}\n{detail}" (torch's check of a NCCL call, `C10D_NCCL_CHECK`).

The threads' most common case on one machine: two ranks of a NCCL group on the same GPU (a
script that never sets each rank's device, more processes than GPUs). NCCL refuses the
communicator (`invalid usage`, `Duplicate GPU detected`), which torch creates at the first
collective. The trigger runs two spawned worker processes of a group of two, both on
`cuda:0`, each doing an all-reduce; the first rank's DistBackendError comes back to this
process. The fix gives each rank its own GPU (a group of one on a one-GPU machine).

Needs CUDA and NCCL: the script declares the cuda device only and is skipped elsewhere; it
has not yet run on a GPU.
"""

import multiprocessing
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "58588cf5c295bbff"
TARGET = Target(
    package="torch", version="2.13.0", module="torch.distributed", classes=("ProcessGroupNCCL",)
)
DEVICES = ("cuda",)
TIMEOUT_S = 60


def all_reduce_on(rank: int, world_size: int, device: int, store_path: str) -> float:
    """One rank of a NCCL group: a one on `cuda:device`, all-reduced."""
    import datetime

    import torch
    import torch.distributed as dist

    store = dist.FileStore(store_path, world_size)
    dist.init_process_group(
        "nccl",
        store=store,
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=TIMEOUT_S),
    )
    try:
        tensor = torch.ones(1, device=f"cuda:{device}")
        dist.all_reduce(tensor)
        return float(tensor.item())
    finally:
        dist.destroy_process_group()


def run_group(devices: list[int]) -> list[float]:
    """A group with one spawned process per entry of `devices` (rank i on `cuda:devices[i]`)."""
    store_path = str(Path(tempfile.mkdtemp()) / "store")
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(len(devices), mp_context=context) as pool:
        futures = [
            pool.submit(all_reduce_on, rank, len(devices), device, store_path)
            for rank, device in enumerate(devices)
        ]
        return [future.result(timeout=2 * TIMEOUT_S) for future in futures]


def trigger(_module: ModuleType, _device: str) -> None:
    """Two ranks, both on cuda:0."""
    run_group([0, 0])


def fix(_module: ModuleType, _device: str) -> dict:
    """One rank per GPU: rank i on cuda:i, for at most two of the machine's GPUs."""
    import torch

    devices = list(range(min(2, torch.cuda.device_count())))
    reduced = run_group(devices)
    require(reduced == [float(len(devices))] * len(devices), f"all-reduce gave {reduced}")
    return {"devices": devices, "reduced": reduced}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
