"""Reproducer for record 7cdaa17d9584324f: "mat1 and mat2 shapes cannot be multiplied (...)".

Raised in C++ (addmm's shape check) when a Linear layer's in_features differs from the
features its input has. The trigger is the CNN case of the threads: a classifier head sized
for 28x28 images fed 32x32 images; the extra scenario is a batch given as
(features, batch). The fix lets the head take the flattened size of what arrives
(nn.LazyLinear), and the model returns one row of logits per image.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "7cdaa17d9584324f"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.nn.modules.linear",
    classes=("Linear", "LazyLinear"),
)
DEVICES = ("cpu",)


def _features() -> object:
    from torch import nn

    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.MaxPool2d(4), nn.Flatten())


def trigger(module: ModuleType, _device: str) -> None:
    """A head sized for 28x28 inputs (16 x 7 x 7 features) on 32x32 images."""
    import torch
    from torch import nn

    model = nn.Sequential(_features(), module.Linear(16 * 7 * 7, 10))
    model(torch.zeros(8, 1, 32, 32))


def trigger_transposed(module: ModuleType, _device: str) -> None:
    """Features given as (features, batch)."""
    import torch

    module.Linear(4, 2)(torch.zeros(4, 8))


def fix(module: ModuleType, _device: str) -> dict:
    """The head infers in_features from the first batch."""
    import torch
    from torch import nn

    model = nn.Sequential(_features(), module.LazyLinear(10))
    out = model(torch.zeros(8, 1, 32, 32))
    require(tuple(out.shape) == (8, 10), f"logits of shape {tuple(out.shape)}")
    return {"in_features": model[1].in_features, "logits": list(out.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"transposed": trigger_transposed},
        )
    )
