"""Reproducer for record ee88ccd366d16980: "Given groups=1, weight of size [...], expected
input[...] to have 3 channels, but got 4 channels instead".

Raised in C++ (the convolution's shape check) when the input's channel dimension differs
from the layer's in_channels. The trigger is the threads' commonest case: a PNG with an
alpha channel (RGBA) read with PIL and fed to an RGB model; the extra scenario is an image
in height-width-channel order (as NumPy and OpenCV hold it) given without permuting. The
fix converts the image to RGB when loading and the model returns its feature map.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "ee88ccd366d16980"
TARGET = Target(
    package="torch", version="2.13.0", module="torch.nn.modules.conv", classes=("Conv2d",)
)
DEVICES = ("cpu",)


def _rgba_pixels() -> list:
    """An 8x8 RGBA image as PIL would hand it over: rows of (r, g, b, a) pixels."""
    return [[(x * 30, y * 30, 128, 255) for x in range(8)] for y in range(8)]


def _to_tensor(pixels: list, keep: int) -> object:
    """The image as a 1xCxHxW float batch, keeping the first `keep` channels of each pixel."""
    import torch

    hwc = torch.tensor([[pixel[:keep] for pixel in row] for row in pixels], dtype=torch.float32)
    return (hwc / 255).permute(2, 0, 1).unsqueeze(0)


def trigger(module: ModuleType, _device: str) -> None:
    """An RGBA image into an RGB model."""
    module.Conv2d(3, 16, 3, padding=1)(_to_tensor(_rgba_pixels(), keep=4))


def trigger_channels_last(module: ModuleType, _device: str) -> None:
    """An HxWxC image given as if it were CxHxW."""
    import torch

    module.Conv2d(3, 16, 3, padding=1)(torch.rand(1, 8, 8, 3))


def fix(module: ModuleType, _device: str) -> dict:
    """The image converted to RGB (alpha dropped) when loading."""
    x = _to_tensor(_rgba_pixels(), keep=3)
    out = module.Conv2d(3, 16, 3, padding=1)(x)
    require(tuple(out.shape) == (1, 16, 8, 8), f"feature map {tuple(out.shape)}")
    return {"input": list(x.shape), "output": list(out.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"channels_last": trigger_channels_last},
        )
    )
