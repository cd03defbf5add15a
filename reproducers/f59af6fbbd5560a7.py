"""Reproducer for record f59af6fbbd5560a7: "CUDA error: invalid device ordinal".

The threads' case: code written for a machine with more GPUs asks for `cuda:N` where N is the
number of GPUs this process sees (one past the last). The trigger creates a tensor there; the
extra scenario is `torch.cuda.set_device(N)`, as a launcher with more ranks than GPUs does.
The fix takes the index from the visible devices.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "f59af6fbbd5560a7"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=())
DEVICES = ("cuda",)


def trigger(module: ModuleType, _device: str) -> None:
    """A tensor on `cuda:N`, N the number of visible GPUs."""
    import torch

    torch.ones(1, device=f"cuda:{module.device_count()}")


def trigger_set_device(module: ModuleType, _device: str) -> None:
    """`set_device` with a rank past the visible GPUs."""
    module.set_device(module.device_count())


def fix(module: ModuleType, _device: str) -> dict:
    """The index taken modulo the visible devices (a local rank mapped onto them)."""
    import torch

    rank = module.device_count()
    index = rank % module.device_count()
    tensor = torch.ones(1, device=f"cuda:{index}")
    require(tensor.device.index == index, f"tensor on {tensor.device}")
    return {"visible": module.device_count(), "rank": rank, "device": str(tensor.device)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"set_device": trigger_set_device},
        )
    )
