"""Reproducer for record 29af13955d4274c0: "expected scalar type {expected} but found {found}".

Raised in C++ (the typed data-pointer accessors) when a CPU kernel computing in one dtype is
given an operand of another. The trigger is the threads' NumPy case: `torch.bmm` of float32
rotations and float64 points made with `torch.from_numpy`; the extra scenarios are
`cross_entropy` with float64 class weights and `conv2d` of float64 data with a float32 kernel.
The fix casts the NumPy data to float32, and the product equals the float64 one.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "29af13955d4274c0"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=())
DEVICES = ("cpu",)


def _operands(module: ModuleType) -> tuple:
    """float32 rotations and float64 points, as NumPy gives them."""
    import numpy as np

    rotations = module.eye(3).repeat(4, 1, 1)
    points = module.from_numpy(np.random.default_rng(0).random((4, 3, 10)))
    return rotations, points


def trigger(module: ModuleType, _device: str) -> None:
    """bmm of a float32 and a float64 batch."""
    rotations, points = _operands(module)
    module.bmm(rotations, points)


def trigger_class_weights(module: ModuleType, _device: str) -> None:
    """Class weights computed with NumPy (float64) for float32 logits."""
    import numpy as np

    weights = module.from_numpy(np.array([1.0, 3.0]))
    module.nn.functional.cross_entropy(
        module.zeros(4, 2), module.tensor([0, 1, 1, 0]), weight=weights
    )


def trigger_conv(module: ModuleType, _device: str) -> None:
    """A float64 image blurred with a float32 kernel."""
    image = module.zeros(1, 1, 8, 8, dtype=module.float64)
    module.nn.functional.conv2d(image, module.ones(1, 1, 3, 3) / 9)


def fix(module: ModuleType, _device: str) -> dict:
    """The NumPy data cast to float32 at the boundary; the product is the float64 one."""
    rotations, points = _operands(module)
    out = module.bmm(rotations, points.float())
    require(out.dtype == module.float32, f"result dtype {out.dtype}")
    require(module.allclose(out.double(), points), "identity rotations keep the points")
    return {"dtype": str(out.dtype), "shape": list(out.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"class_weights": trigger_class_weights, "conv": trigger_conv},
        )
    )
