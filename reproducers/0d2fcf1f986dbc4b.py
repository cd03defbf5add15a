"""Reproducer for record 0d2fcf1f986dbc4b: "Trying to backward through the graph a second time ...".

Raised in C++ (SavedVariable::unpack) when a backward pass reaches saved tensors that an
earlier backward already freed. The trigger is the two-step optimizer case of the threads
(SAM): the second loss is built from the first pass's output, so its backward walks the
freed graph again. The extra scenario is a recurrent state carried from one batch to the
next without detaching. The fix makes a full second forward pass, so each backward has a
graph of its own, and every parameter gets a gradient in both steps.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "0d2fcf1f986dbc4b"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.autograd",
    classes=(),
)
DEVICES = ("cpu",)


def _model_and_batch() -> tuple:
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    return model, torch.randn(16, 4), torch.randint(0, 2, (16,))


def trigger(_module: ModuleType, _device: str) -> None:
    """Two backward passes through one forward pass's graph."""
    from torch import nn

    model, x, y = _model_and_batch()
    criterion = nn.CrossEntropyLoss()
    output = model(x)
    criterion(output, y).backward()
    criterion(output, y).backward()  # the second step reuses the first pass's output


def trigger_hidden_state(_module: ModuleType, _device: str) -> None:
    """An RNN's hidden state carried over batches without detaching."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    rnn = nn.RNN(3, 5, batch_first=True)
    hidden = torch.zeros(1, 2, 5)
    for _ in range(2):
        out, hidden = rnn(torch.randn(2, 4, 3), hidden)
        out.sum().backward()


def fix(module: ModuleType, _device: str) -> dict:
    """A fresh forward pass for each backward; every parameter gets a gradient each time."""
    from torch import nn

    model, x, y = _model_and_batch()
    criterion = nn.CrossEntropyLoss()
    steps = 0
    for _ in range(2):
        model.zero_grad()
        criterion(model(x), y).backward()
        grads = [p.grad for p in model.parameters()]
        require(all(g is not None for g in grads), "a parameter got no gradient")
        steps += 1
    require(hasattr(module, "backward"), "torch.autograd has no backward")
    return {"backward_passes": steps, "parameters_with_grad": len(grads)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"hidden_state": trigger_hidden_state},
        )
    )
