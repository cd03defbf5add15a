"""Reproducer for record 5b688ef5d51e8fb6: "The size of tensor a ({a}) must match the size of
tensor b ({b}) at non-singleton dimension {d}".

Raised in C++ when two shapes cannot broadcast. The trigger is the threads' off-by-one case:
a skip connection added to an upsampled feature map when the input size (31) is not a
multiple of the network's stride (2), so the maps are 32 and 31 wide. The extra scenario is
an RGBA image normalized with RGB's three-value mean. The fix resizes the upsampled map to
the skip connection's size before adding them.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "5b688ef5d51e8fb6"
TARGET = Target(package="torch", version="2.13.0", module="torch.nn.functional", classes=())
DEVICES = ("cpu",)
SIZE = 31  # not a multiple of the stride


def _maps() -> tuple:
    """The skip connection and the upsampled map of a one-level U-Net."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    skip = torch.randn(1, 4, SIZE, SIZE)
    down = nn.Conv2d(4, 4, 3, stride=2, padding=1)(skip)
    return skip, nn.Upsample(scale_factor=2)(down)


def trigger(_module: ModuleType, _device: str) -> None:
    """The upsampled map (32x32) plus the skip connection (31x31)."""
    skip, up = _maps()
    _ = up + skip


def trigger_rgba_normalize(_module: ModuleType, _device: str) -> None:
    """An RGBA image minus RGB's mean."""
    import torch

    image = torch.rand(4, 8, 8)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    _ = image - mean


def fix(module: ModuleType, _device: str) -> dict:
    """The upsampled map resized to the skip connection's size."""
    skip, up = _maps()
    merged = module.interpolate(up, size=skip.shape[-2:], mode="bilinear", align_corners=False)
    out = merged + skip
    require(out.shape == skip.shape, f"merged shape {tuple(out.shape)}")
    return {"skip": list(skip.shape), "upsampled": list(up.shape), "merged": list(out.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"rgba_normalize": trigger_rgba_normalize},
        )
    )
