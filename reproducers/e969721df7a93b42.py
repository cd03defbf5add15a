"""Reproducer for record e969721df7a93b42: "Expected all tensors to be on the same device, but
found at least two devices, {a} and {b}!".

Raised in C++ before a kernel runs: the dispatcher's common-device check (with "when checking
argument for argument ... in method ...") or TensorIterator's. The trigger is the threads'
commonest case: the model on CUDA and the batch left on the CPU (a Linear layer: addmm's
argument check). The extra scenario is a mask created inside forward without a device (an
element-wise product: TensorIterator's check). The fix creates the tensors on the input's
device and moves the batch with the model; the output is on the GPU.

Needs CUDA: a CPU-only process has one device, so the script declares the cuda device only
and is skipped elsewhere.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "e969721df7a93b42"
TARGET = Target(package="torch", version="2.13.0", module="torch.nn.modules.linear", classes=())
DEVICES = ("cuda",)


def _masked(x: object, device: object) -> object:
    """A layer whose forward builds a mask, on `device` (None: torch's default, the CPU)."""
    import torch

    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 4).to(x.device)
    mask = torch.ones(4) if device is None else torch.ones(4, device=device)
    return layer(x) * mask


def trigger(module: ModuleType, device: str) -> None:
    """The model on CUDA, the batch on the CPU."""
    import torch

    module.Linear(4, 2).to(device)(torch.ones(3, 4))


def trigger_mask(_module: ModuleType, device: str) -> None:
    """A mask created on the CPU inside forward."""
    import torch

    _masked(torch.ones(3, 4, device=device), None)


def fix(module: ModuleType, device: str) -> dict:
    """Batch moved with the model; tensors created on the input's device."""
    import torch

    x = torch.ones(3, 4).to(device)
    out = module.Linear(4, 2).to(device)(x)
    masked = _masked(x, x.device)
    require(out.device.type == "cuda" and masked.device.type == "cuda", "a result left the GPU")
    return {"device": str(out.device), "output": list(out.shape), "masked": list(masked.shape)}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"mask": trigger_mask}))
