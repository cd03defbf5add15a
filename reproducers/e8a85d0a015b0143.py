"""Reproducer for record e8a85d0a015b0143: "cannot pin '{tensor_type}' only dense CPU tensors can be
pinned".

Raised in C++ (`_pin_memory`): only host memory can be page-locked. The threads' tensors are
CUDA tensors that a `DataLoader(pin_memory=True)` pins; the check refuses every device but the
CPU, so without a GPU the trigger pins a meta tensor (the type it names is `MetaFloatType`),
and with one it runs the threads' case: a dataset that returns CUDA tensors behind a pinning
loader. The fix keeps data that is already off the host unpinned.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "e8a85d0a015b0143"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cpu", "cuda")


def trigger(module: ModuleType, device: str) -> None:
    """`pin_memory()` on a tensor off the host (meta without a GPU, CUDA with one)."""
    module.ones(3, device="meta" if device == "cpu" else device).pin_memory()


def trigger_loader(module: ModuleType, device: str) -> None:
    """A pinning DataLoader over a dataset already on the device."""
    from torch.utils.data import DataLoader, TensorDataset

    if device == "cpu":
        trigger(module, device)  # a CPU-only process has no pinning loader to test
        return
    data = TensorDataset(module.ones(4, 2, device=device))
    next(iter(DataLoader(data, batch_size=2, pin_memory=True)))


def fix(module: ModuleType, device: str) -> dict:
    """Data already off the host goes through a loader that does not pin."""
    from torch.utils.data import DataLoader, TensorDataset

    target = "meta" if device == "cpu" else device
    data = TensorDataset(module.ones(4, 2, device=target))
    (batch,) = next(iter(DataLoader(data, batch_size=2, pin_memory=False)))
    require(tuple(batch.shape) == (2, 2), f"batch shape {tuple(batch.shape)}")
    return {"device": str(batch.device), "batch": list(batch.shape), "pin_memory": False}


if __name__ == "__main__":
    sys.exit(
        main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"loader": trigger_loader})
    )
