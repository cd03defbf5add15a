"""Reproducer for record c708be9e2bb6cbbd: "Expected to have finished reduction in the prior
iteration before starting a new one. ...".

DistributedDataParallel's C++ reducer refuses to start a forward pass while the previous
iteration's gradient reduction is unfinished, which happens when some parameters got no
gradient. The trigger wraps a model with a head defined in __init__ but never used in
forward: the second iteration raises. The extra scenario is a model whose forward returns
an auxiliary output that the loss leaves out. The fix freezes the unused head before
wrapping (the record's first choice over find_unused_parameters): three iterations run and
the used layer's weights change.

The group is gloo with one process over an in-memory store, so it runs on any CPU.
Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "c708be9e2bb6cbbd"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.nn.parallel.distributed",
    classes=("DistributedDataParallel",),
)
DEVICES = ("cpu",)


def _net(with_aux_output: bool = False) -> object:
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(4, 4)
            self.aux_head = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> object:
            out = self.body(x)
            return (out, self.aux_head(out)) if with_aux_output else out

    torch.manual_seed(0)
    return Net()


def _train(module: ModuleType, net: object, steps: int, pick: object = None) -> object:
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = module.DistributedDataParallel(net)
        optimizer = torch.optim.SGD([p for p in net.parameters() if p.requires_grad], lr=0.1)
        for _ in range(steps):
            out = model(torch.ones(2, 4))
            loss = (pick(out) if pick else out).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return model
    finally:
        dist.destroy_process_group()


def trigger(module: ModuleType, _device: str) -> None:
    """A head defined but never used in forward."""
    _train(module, _net(), steps=2)


def trigger_aux_output(module: ModuleType, _device: str) -> None:
    """An auxiliary output left out of the loss."""
    _train(module, _net(with_aux_output=True), steps=2, pick=lambda out: out[0])


def fix(module: ModuleType, _device: str) -> dict:
    """The unused head frozen before wrapping."""
    import torch

    net = _net()
    net.aux_head.requires_grad_(False)
    before = net.body.weight.detach().clone()
    _train(module, net, steps=3)
    require(not torch.equal(net.body.weight, before), "the used layer did not train")
    return {"steps": 3, "frozen": ["aux_head"], "body_trained": True}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"aux_output": trigger_aux_output},
        )
    )
