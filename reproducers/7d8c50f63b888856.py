"""Reproducer for record 7d8c50f63b888856: "indices should be either on cpu or on the same device as
the indexed tensor ({device})".

The threads' case: a lookup table left on the CPU indexed with ids the model computed on the
GPU (`(cpu)` in the message). The fix builds the table on the ids' device.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "7d8c50f63b888856"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cuda",)


def trigger(module: ModuleType, device: str) -> None:
    """A CPU table, CUDA indices."""
    table = module.arange(10)
    table[module.tensor([1, 2], device=device)]


def fix(module: ModuleType, device: str) -> dict:
    """The table on the indices' device."""
    ids = module.tensor([1, 2], device=device)
    values = module.arange(10, device=ids.device)[ids]
    require(values.tolist() == [1, 2], f"values {values.tolist()}")
    return {"device": str(values.device), "values": values.tolist()}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
