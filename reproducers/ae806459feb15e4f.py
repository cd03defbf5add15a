"""Reproducer for record ae806459feb15e4f: "Attempting to deserialize object on a CUDA device
but torch.cuda.is_available() is False ...".

torch.load restores each storage on the device its checkpoint recorded; for a `cuda` location
torch.serialization._validate_device raises when this process has no CUDA. The checkpoints
are written here as a GPU machine writes them: torch.save records the location its device
taggers give, and torch.serialization.register_package (torch's hook for device backends)
tags the storages `cuda:0` while they are saved. The trigger loads a tensor checkpoint without
map_location, the extra scenario a model's state_dict; the fix passes map_location='cpu' and
gets the saved values on the CPU.

Needs a process without CUDA (the CPU CI): where torch.cuda.is_available() is True the load
succeeds, so there the scenario is an error, never a pass or a failure.
"""

import io
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require
from app.upstreams.release_errors import UpstreamError

RECORD_ID = "ae806459feb15e4f"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.serialization",
    classes=(),
)
DEVICES = ("cpu",)
GPU_LOCATION = "cuda:0"
_saving_from_gpu = False  # while True, every saved storage is recorded at GPU_LOCATION


def _gpu_tag(_storage: object) -> str | None:
    return GPU_LOCATION if _saving_from_gpu else None


def _never_restores(_storage: object, _location: str) -> None:
    return None  # restoring is left to torch's own cpu and cuda deserializers


def _saved_on_gpu(module: ModuleType, value: object) -> bytes:
    """`value` as torch.save writes it from CUDA tensors: storages at cuda:0."""
    global _saving_from_gpu
    buffer = io.BytesIO()
    _saving_from_gpu = True
    try:
        module.save(value, buffer)
    finally:
        _saving_from_gpu = False
    return buffer.getvalue()


def _values() -> dict:
    import torch

    return {"weight": torch.arange(6.0).reshape(2, 3), "bias": torch.ones(2)}


def _no_cuda() -> None:
    import torch

    if torch.cuda.is_available():
        raise UpstreamError("this scenario needs a process without CUDA; CUDA is available")


def trigger(module: ModuleType, _device: str) -> None:
    """A checkpoint saved from the GPU, loaded without map_location."""
    _no_cuda()
    module.load(io.BytesIO(_saved_on_gpu(module, _values())))


def trigger_model_state(module: ModuleType, _device: str) -> None:
    """A model's state_dict saved from the GPU, loaded the same way."""
    import torch

    _no_cuda()
    module.load(io.BytesIO(_saved_on_gpu(module, torch.nn.Linear(3, 2).state_dict())))


def fix(module: ModuleType, _device: str) -> dict:
    """map_location='cpu' remaps the storages before the device check."""
    import torch

    expected = _values()
    data = _saved_on_gpu(module, expected)
    require(GPU_LOCATION.encode() in data, "the checkpoint does not record cuda:0 storages")
    loaded = module.load(io.BytesIO(data), map_location="cpu")
    devices = sorted({tensor.device.type for tensor in loaded.values()})
    require(devices == ["cpu"], f"the tensors were loaded on {devices}")
    same = all(torch.equal(loaded[key], value) for key, value in expected.items())
    require(same, "the loaded tensors differ from the saved ones")
    return {"recorded_location": GPU_LOCATION, "loaded_on": devices, "keys": sorted(loaded)}


if __name__ == "__main__":
    import torch.serialization

    torch.serialization.register_package(5, _gpu_tag, _never_restores)
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"model_state": trigger_model_state},
        )
    )
