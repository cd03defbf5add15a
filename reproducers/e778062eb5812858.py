"""Reproducer for record e778062eb5812858: "optimizer got an empty parameter list".

torch.optim.Optimizer.__init__ lists its `params` and raises when the list is empty. The
trigger builds SGD over a module that keeps its layers in a plain Python list, so
`parameters()` yields nothing; the extra scenarios are the two other ways people meet it: every
parameter frozen and then filtered on requires_grad, and a parameter generator consumed before
it reaches the optimizer. The fix registers the layers with nn.ModuleList and passes a list of
the trainable parameters: the optimizer holds all of them and one step changes the weights.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "e778062eb5812858"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.optim.optimizer",
    classes=("Optimizer",),
)
DEVICES = ("cpu",)


def _net(registered: bool) -> object:
    """Two linear layers, registered with nn.ModuleList or kept in a plain list."""
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers = [nn.Linear(4, 8), nn.Linear(8, 2)]
            self.layers = nn.ModuleList(layers) if registered else layers

        def forward(self, x: object) -> object:
            for layer in self.layers:
                x = layer(x)
            return x

    return Net()


def trigger(_module: ModuleType, _device: str) -> None:
    """The layers sit in a plain list: the module registers no parameter."""
    import torch

    torch.optim.SGD(_net(registered=False).parameters(), lr=0.1)


def trigger_all_frozen(_module: ModuleType, _device: str) -> None:
    """A frozen model whose trainable parameters are filtered on requires_grad."""
    import torch

    model = _net(registered=True)
    model.requires_grad_(False)
    torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)


def trigger_consumed_generator(_module: ModuleType, _device: str) -> None:
    """The parameter generator was iterated (to count the weights) before the optimizer."""
    import torch

    params = _net(registered=True).parameters()
    sum(p.numel() for p in params)
    torch.optim.AdamW(params, lr=1e-3)


def fix(module: ModuleType, _device: str) -> dict:
    """nn.ModuleList registers the layers; a list of the trainable ones reaches the optimizer."""
    import torch

    model = _net(registered=True)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=0.1)
    require(isinstance(optimizer, module.Optimizer), "SGD is not a torch.optim Optimizer")
    held = sum(len(group["params"]) for group in optimizer.param_groups)
    require(held == 4, f"the optimizer holds {held} tensors, not the 4 weights and biases")
    before = [p.detach().clone() for p in params]
    model(torch.ones(3, 4)).sum().backward()
    optimizer.step()
    changed = sum(not torch.equal(old, new) for old, new in zip(before, params, strict=True))
    require(changed == len(params), f"one step changed {changed} of {len(params)} tensors")
    return {"param_groups": len(optimizer.param_groups), "params": held, "changed": changed}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={
                "all_frozen": trigger_all_frozen,
                "consumed_generator": trigger_consumed_generator,
            },
        )
    )
