"""Reproducer for record 7222a58d60df4fae: "one of the variables needed for gradient computation
has been modified by an inplace operation: ...".

Raised in C++ (SavedVariable::unpack) when a tensor saved for backward changed version. The
trigger is a residual added in place to a sigmoid's output, which sigmoid saved for its
gradient; the extra scenario is the GAN ordering of the threads: an optimizer step on a
weight between the forward pass and a backward that still needs it (a parameter, output 0
of AsStrided, at version 2). The fix writes the residual out of place: backward runs and the
input gets its gradient.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "7222a58d60df4fae"
TARGET = Target(package="torch", version="2.13.0", module="torch.autograd", classes=())
DEVICES = ("cpu",)


def _block(x: object, inplace: bool) -> object:
    import torch
    from torch import nn

    torch.manual_seed(0)
    h = torch.sigmoid(nn.Linear(4, 4)(x))
    if inplace:
        h += x
    else:
        h = h + x
    return h


def trigger(_module: ModuleType, _device: str) -> None:
    """A residual added in place to a sigmoid output."""
    import torch

    x = torch.randn(2, 4, requires_grad=True)
    _block(x, inplace=True).sum().backward()


def trigger_step_between(_module: ModuleType, _device: str) -> None:
    """An optimizer step between the forward pass and the second backward."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    first, second = nn.Linear(4, 4), nn.Linear(4, 1)
    optimizer = torch.optim.SGD(second.parameters(), lr=0.1)
    out = second(torch.relu(first(torch.randn(2, 4))))
    out.sum().backward(retain_graph=True)
    optimizer.step()  # changes second.weight in place
    out.mean().backward()


def fix(module: ModuleType, _device: str) -> dict:
    """The residual written out of place."""
    import torch

    x = torch.randn(2, 4, requires_grad=True)
    module.backward(_block(x, inplace=False).sum())
    require(x.grad is not None and x.grad.shape == x.shape, "the input got no gradient")
    return {"residual": "h = h + x", "input_grad_shape": list(x.grad.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"step_between": trigger_step_between},
        )
    )
