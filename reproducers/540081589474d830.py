"""Reproducer for record 540081589474d830: "Error(s) in loading state_dict for {class}: ...".

torch.nn.Module.load_state_dict collects missing keys, unexpected keys and size mismatches
and raises when any is left. The trigger loads weights saved from nn.DataParallel (every key
prefixed with `module.`) into the bare model; the extra scenarios load a whole training
checkpoint dictionary instead of its weights, and weights of a model with another number of
classes (a size mismatch). The fix takes the weights out of the checkpoint and strips the
wrapper's prefix with torch's own consume_prefix_in_state_dict_if_present: every tensor then
loads, no key is left over, and the model holds the saved values.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import io
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "540081589474d830"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.nn.modules.module",
    classes=("Module",),
)
DEVICES = ("cpu",)


def _net(classes: int = 3) -> object:
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = nn.Linear(4, 8)
            self.fc = nn.Linear(8, classes)

    return Net()


def _saved_and_loaded(state: dict) -> dict:
    """The dictionary as torch.save writes it and torch.load reads it back."""
    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, map_location="cpu")


def _data_parallel_checkpoint() -> dict:
    """A training checkpoint of a model trained under nn.DataParallel."""
    from torch import nn

    trained = nn.DataParallel(_net())
    return _saved_and_loaded({"state_dict": trained.state_dict(), "epoch": 3})


def trigger(_module: ModuleType, _device: str) -> None:
    """The DataParallel weights (keys `module.*`) into the bare model."""
    _net().load_state_dict(_data_parallel_checkpoint()["state_dict"])


def trigger_whole_checkpoint(_module: ModuleType, _device: str) -> None:
    """The training checkpoint itself, not its weights."""
    _net().load_state_dict(_data_parallel_checkpoint())


def trigger_other_head(_module: ModuleType, _device: str) -> None:
    """Weights of a 3-class model into a 5-class one: a size mismatch."""
    _net(classes=5).load_state_dict(_saved_and_loaded(_net(classes=3).state_dict()))


def fix(module: ModuleType, _device: str) -> dict:
    """The weights out of the checkpoint, the wrapper's prefix stripped, loaded strictly."""
    import torch
    from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

    checkpoint = _data_parallel_checkpoint()
    state_dict = checkpoint.get("state_dict", checkpoint)
    consume_prefix_in_state_dict_if_present(state_dict, "module.")
    model = _net()
    require(isinstance(model, module.Module), "the model is not a torch.nn.Module")
    result = model.load_state_dict(state_dict)
    require(not result.missing_keys, f"missing keys after the fix: {result.missing_keys}")
    require(not result.unexpected_keys, f"unexpected keys: {result.unexpected_keys}")
    loaded = model.state_dict()
    same = all(torch.equal(loaded[key], value) for key, value in state_dict.items())
    require(same, "the model does not hold the checkpoint's values")
    return {"loaded_keys": sorted(loaded), "missing": 0, "unexpected": 0}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={
                "whole_checkpoint": trigger_whole_checkpoint,
                "other_head": trigger_other_head,
            },
        )
    )
