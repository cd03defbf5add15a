"""Reproducer for record eb844c2a707cc307: "Weights only load failed. ...".

torch.load unpickles with the restricted weights-only unpickler by default (since 2.6) and
re-raises its refusal as this UnpicklingError. The trigger is a training checkpoint that
holds a custom config object next to the weights, loaded with the default; the extra
scenarios are a whole nn.Module saved with torch.save(model) (the YOLO/ComfyUI case) and a
NumPy scalar stored in the checkpoint. The fix keeps the safe loader and allowlists exactly
the class the message names with torch.serialization.safe_globals: the checkpoint loads,
the weights are the saved ones and the config comes back as the class it was.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import io
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "eb844c2a707cc307"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.serialization",
    classes=(),
)
DEVICES = ("cpu",)


@dataclass
class TrainConfig:
    """What training scripts store next to the weights."""

    lr: float = 0.1
    epochs: int = 3


def _saved(obj: object) -> io.BytesIO:
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _checkpoint() -> dict:
    from torch import nn

    return {"model": nn.Linear(3, 2).state_dict(), "config": TrainConfig()}


def trigger(module: ModuleType, _device: str) -> None:
    """A checkpoint with a custom config object, loaded with the default weights_only."""
    module.load(_saved(_checkpoint()))


def trigger_whole_model(module: ModuleType, _device: str) -> None:
    """A whole module pickled with torch.save(model)."""
    from torch import nn

    module.load(_saved(nn.Sequential(nn.Linear(3, 2))))


def trigger_numpy_scalar(module: ModuleType, _device: str) -> None:
    """A NumPy scalar (a best score) stored in the checkpoint."""
    import numpy

    module.load(_saved({"best_acc": numpy.float64(0.93)}))


def fix(module: ModuleType, _device: str) -> dict:
    """The safe loader kept; the one class the message names allowlisted."""
    import torch

    saved = _checkpoint()
    with module.safe_globals([TrainConfig]):
        loaded = module.load(_saved(saved))
    require(isinstance(loaded["config"], TrainConfig), "the config is not a TrainConfig")
    require(loaded["config"] == saved["config"], "the config changed")
    same = all(torch.equal(loaded["model"][k], v) for k, v in saved["model"].items())
    require(same, "the weights are not the saved ones")
    return {"weights_only": True, "allowlisted": ["TrainConfig"], "keys": sorted(loaded["model"])}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={
                "whole_model": trigger_whole_model,
                "numpy_scalar": trigger_numpy_scalar,
            },
        )
    )
