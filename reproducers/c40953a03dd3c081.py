"""Reproducer for record c40953a03dd3c081: "element 0 of tensors does not require grad and does
not have a grad_fn".

Raised in C++ (the Python engine's run_backward) when a tensor handed to backward neither
requires grad nor has a grad_fn. The trigger is the fine-tuning case of the threads: the
whole model frozen, head included, so the loss is not connected to any trainable tensor. The
extra scenario is a loss computed under torch.no_grad() (evaluation code reused for
training). The fix freezes only the backbone: the head trains, its weights get gradients and
change after one optimizer step, and the frozen backbone keeps its values.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "c40953a03dd3c081"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.autograd",
    classes=(),
)
DEVICES = ("cpu",)


def _net() -> object:
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def _batch() -> tuple:
    import torch

    return torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2])


def trigger(_module: ModuleType, _device: str) -> None:
    """The whole model frozen, head included."""
    from torch import nn

    model = _net()
    model.requires_grad_(False)
    x, y = _batch()
    nn.functional.cross_entropy(model(x), y).backward()


def trigger_no_grad(_module: ModuleType, _device: str) -> None:
    """The training loss computed under torch.no_grad()."""
    import torch
    from torch import nn

    model = _net()
    x, y = _batch()
    with torch.no_grad():
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()


def fix(module: ModuleType, _device: str) -> dict:
    """The backbone frozen, the head trained."""
    import torch
    from torch import nn

    model = _net()
    model.requires_grad_(False)
    model[2].requires_grad_(True)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(trainable, lr=0.5)
    backbone = model[0].weight.clone()
    head = model[2].weight.clone()
    x, y = _batch()
    loss = nn.functional.cross_entropy(model(x), y)
    require(loss.grad_fn is not None, "the loss has no grad_fn")
    module.backward(loss)
    optimizer.step()
    require(model[2].weight.grad is not None, "the head got no gradient")
    require(not torch.equal(model[2].weight, head), "the head did not change")
    require(torch.equal(model[0].weight, backbone), "the frozen backbone changed")
    return {"trainable_tensors": len(trainable), "head_changed": True, "backbone_changed": False}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"no_grad": trigger_no_grad},
        )
    )
