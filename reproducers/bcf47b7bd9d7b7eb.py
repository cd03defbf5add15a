"""Reproducer for record bcf47b7bd9d7b7eb: "can't convert {device} device type tensor to numpy.
Use Tensor.cpu() to copy the tensor to host memory first."

Raised in C++ (`tensor_to_numpy`): NumPy arrays live in host memory. The threads' tensors are
on CUDA; the same check refuses every device but the CPU, so on a machine without a GPU the
trigger uses the meta device (a tensor with no data) and on a GPU a CUDA tensor; the extra
scenario is NumPy's own `np.asarray`. The fix copies the tensor to the CPU first.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "bcf47b7bd9d7b7eb"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cpu", "cuda")


def _off_host(module: ModuleType, device: str) -> object:
    """A tensor NumPy cannot read: on CUDA where there is one, else on the meta device."""
    return module.ones(3, device="meta" if device == "cpu" else device)


def trigger(module: ModuleType, device: str) -> None:
    """`Tensor.numpy()` on a tensor off the host."""
    _off_host(module, device).numpy()


def trigger_asarray(module: ModuleType, device: str) -> None:
    """NumPy's `asarray` (through `Tensor.__array__`)."""
    import numpy

    numpy.asarray(_off_host(module, device))


def fix(module: ModuleType, device: str) -> dict:
    """Copied to the host first (`.detach().cpu().numpy()`)."""
    target = "cpu" if device == "cpu" else device
    tensor = module.ones(3, device=target, requires_grad=True) * 2
    array = tensor.detach().cpu().numpy()
    require(array.tolist() == [2.0, 2.0, 2.0], f"array {array.tolist()}")
    return {"device": str(tensor.device), "array": array.tolist()}


if __name__ == "__main__":
    sys.exit(
        main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"asarray": trigger_asarray})
    )
