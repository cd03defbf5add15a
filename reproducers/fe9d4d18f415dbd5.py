"""Reproducer for record fe9d4d18f415dbd5: "a leaf Variable that requires grad is being used ...".

Raised in C++ (check_inplace, run before every in-place operation) when a leaf tensor that
requires grad is modified in place while grad mode is on. The trigger is the threads' manual
gradient step, `w -= lr * w.grad` on a parameter; the extra scenario initializes a Linear
layer's weight in place with `uniform_`. The fix makes the step under `torch.no_grad()`: the
weight moves against its gradient and the loss falls.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "fe9d4d18f415dbd5"
TARGET = Target(package="torch", version="2.13.0", module="torch.autograd", classes=())
DEVICES = ("cpu",)
LR = 0.1


def _weight_with_grad() -> tuple:
    import torch

    w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    loss = (w**2).sum()
    loss.backward()
    return w, loss.item()


def trigger(_module: ModuleType, _device: str) -> None:
    """A hand-written SGD step on a leaf, with grad mode on."""
    w, _ = _weight_with_grad()
    w -= LR * w.grad


def trigger_init(_module: ModuleType, _device: str) -> None:
    """A custom initialization writing into a parameter in place."""
    from torch import nn

    nn.Linear(4, 2).weight.uniform_(-0.1, 0.1)


def fix(_module: ModuleType, _device: str) -> dict:
    """The step made under no_grad: the loss falls and the weight stays a leaf."""
    import torch

    w, before = _weight_with_grad()
    with torch.no_grad():
        w -= LR * w.grad
    w.grad.zero_()
    after = (w**2).sum().item()
    require(after < before, f"loss {before} -> {after}")
    require(w.is_leaf and w.requires_grad, "the weight is still a trainable leaf")
    require(torch.is_grad_enabled(), "grad mode is on again after the update")
    return {"loss_before": before, "loss_after": round(after, 6), "is_leaf": w.is_leaf}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"init": trigger_init}))
