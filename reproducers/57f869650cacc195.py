"""Reproducer for record 57f869650cacc195: "Can't call numpy() on Tensor that requires grad. ...".

Raised in C++ (tensor_to_numpy's check) when a tensor that requires grad is converted to
NumPy while grad mode is on. The trigger is the threads' logging case: `np.mean` over a list
of loss tensors, which NumPy converts through `Tensor.__array__`; the extra scenario calls
`.numpy()` on a model's output. The fix logs `loss.item()` and predicts under
`torch.no_grad()`, and the numbers equal the detached tensors' values.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "57f869650cacc195"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cpu",)


def _model_and_batches(module: ModuleType) -> tuple:
    module.manual_seed(0)
    return module.nn.Linear(4, 1), [module.randn(2, 4) for _ in range(3)]


def trigger(module: ModuleType, _device: str) -> None:
    """The mean of three attached losses, computed by NumPy."""
    import numpy as np

    model, batches = _model_and_batches(module)
    np.mean([model(batch).pow(2).mean() for batch in batches])


def trigger_output(module: ModuleType, _device: str) -> None:
    """A model's output converted with .numpy() outside no_grad."""
    model, batches = _model_and_batches(module)
    model(batches[0]).numpy()


def fix(module: ModuleType, _device: str) -> dict:
    """Losses logged as numbers; predictions made under no_grad."""
    import numpy as np

    model, batches = _model_and_batches(module)
    losses = [model(batch).pow(2).mean() for batch in batches]
    mean_loss = float(np.mean([loss.item() for loss in losses]))
    expected = module.stack(losses).mean().item()
    require(abs(mean_loss - expected) < 1e-6, f"mean {mean_loss}, expected {expected}")
    with module.no_grad():
        predictions = model(batches[0]).numpy()
    require(predictions.shape == (2, 1), f"predictions of shape {predictions.shape}")
    require(losses[0].requires_grad, "the losses still carry their graph for backward")
    return {"mean_loss": round(mean_loss, 6), "predictions": list(predictions.shape)}


if __name__ == "__main__":
    sys.exit(
        main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"output": trigger_output})
    )
