"""Reproducer for record 08c77396aae53af9: "mat1 and mat2 must have the same dtype, but got ...".

Raised in C++ (addmm's dtype check): matrix products do not promote dtypes. The trigger is
the tabular-data case of the threads: NumPy features (float64) fed to a float32 model; the
extra scenario is a half-precision model fed float32 activations. The fix casts the input to
the layer's dtype, and the output comes back in the model's dtype.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "08c77396aae53af9"
TARGET = Target(
    package="torch", version="2.13.0", module="torch.nn.modules.linear", classes=("Linear",)
)
DEVICES = ("cpu",)


def _features() -> object:
    import numpy

    return numpy.random.default_rng(0).random((8, 4))  # float64, as NumPy makes it


def trigger(module: ModuleType, _device: str) -> None:
    """NumPy float64 into a float32 Linear layer."""
    import torch

    module.Linear(4, 2)(torch.from_numpy(_features()))


def trigger_half_model(module: ModuleType, _device: str) -> None:
    """A bfloat16 model fed float32 activations."""
    import torch

    module.Linear(4, 2).to(torch.bfloat16)(torch.ones(3, 4))


def fix(module: ModuleType, _device: str) -> dict:
    """The input cast to the weight's dtype."""
    import torch

    layer = module.Linear(4, 2)
    x = torch.from_numpy(_features()).to(layer.weight.dtype)
    out = layer(x)
    require(out.dtype == torch.float32, f"output dtype {out.dtype}")
    require(tuple(out.shape) == (8, 2), f"output shape {tuple(out.shape)}")
    return {"input": "float64 -> float32", "output_dtype": str(out.dtype)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"half_model": trigger_half_model},
        )
    )
