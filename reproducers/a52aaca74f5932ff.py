"""Reproducer for record a52aaca74f5932ff: "Expected input batch_size ({n}) to match target
batch_size ({m}).".

Raised by nll_loss's shape check (C++, a ValueError) when logits and class-index targets
differ in their first dimension. The trigger is the classifier case: a feature map flattened
with a guessed width, view(-1, 64), which turns a batch of 8 into 32 rows of logits; the
extra scenario is one-hot labels flattened into N*C targets. The fix flattens per sample
(torch.flatten(x, 1)): one row of logits per label, and the loss is a finite number.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "a52aaca74f5932ff"
TARGET = Target(package="torch", version="2.13.0", module="torch.nn.functional", classes=())
DEVICES = ("cpu",)


def _batch() -> tuple:
    """A feature map of 8 images and their labels."""
    import torch

    torch.manual_seed(0)
    return torch.randn(8, 16, 4, 4), torch.randint(0, 10, (8,))


def trigger(module: ModuleType, _device: str) -> None:
    """view(-1, 64) on a (8, 16, 4, 4) map: 32 rows of logits for 8 labels."""
    from torch import nn

    x, labels = _batch()
    module.cross_entropy(nn.Linear(64, 10)(x.view(-1, 64)), labels)


def trigger_one_hot(module: ModuleType, _device: str) -> None:
    """One-hot labels flattened into 8 x 10 targets."""
    import torch

    _, labels = _batch()
    one_hot = module.one_hot(labels, 10)
    module.cross_entropy(torch.randn(8, 10), one_hot.view(-1))


def fix(module: ModuleType, _device: str) -> dict:
    """Flattened per sample: one row of logits per label."""
    import torch
    from torch import nn

    x, labels = _batch()
    logits = nn.Linear(256, 10)(torch.flatten(x, 1))
    loss = module.cross_entropy(logits, labels)
    require(logits.shape[0] == labels.shape[0], f"logits {tuple(logits.shape)}")
    require(bool(torch.isfinite(loss)), f"loss {loss}")
    return {"logits": list(logits.shape), "targets": list(labels.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"one_hot": trigger_one_hot},
        )
    )
