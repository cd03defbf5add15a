"""Reproducer for record a85e5b91e9b80a8c: "CUDA error: an illegal memory access was encountered".

Nothing in torch's own operators reads outside its memory on purpose, so the trigger does
what a faulty extension does: it hands torch a CUDA buffer through `__cuda_array_interface__`
whose stride points a terabyte past the real allocation, and copies it; the kernel faults and
the next synchronising call raises. The context is unusable afterwards, so the fix runs in a
fresh process (a spawn pool): the same buffer described with its real stride.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "a85e5b91e9b80a8c"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cuda",)
FLOAT_BYTES = 4


class _Described:
    """A CUDA buffer as an extension describes it to torch: pointer, shape, byte strides."""

    def __init__(self, base: object, stride_bytes: int) -> None:
        self.base = base  # kept alive while torch reads it
        self.__cuda_array_interface__ = {
            "shape": (2,),
            "typestr": "<f4",
            "data": (base.data_ptr(), False),
            "strides": (stride_bytes,),
            "version": 2,
        }


def copy_described() -> list[float]:
    """The fix, in a fresh process: the real stride of a float32 buffer."""
    import torch

    base = torch.arange(2, dtype=torch.float32, device="cuda")
    return torch.as_tensor(_Described(base, FLOAT_BYTES), device="cuda").clone().tolist()


def trigger(module: ModuleType, device: str) -> None:
    """A stride a terabyte past the allocation; the copy kernel reads there."""
    base = module.arange(2, dtype=module.float32, device=device)
    module.as_tensor(_Described(base, 1 << 40), device=device).clone()
    module.cuda.synchronize()


def fix(_module: ModuleType, _device: str) -> dict:
    """The buffer described with its real stride, copied in a fresh process."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        values = pool.apply(copy_described)
    require(values == [0.0, 1.0], f"copied {values}")
    return {"stride_bytes": FLOAT_BYTES, "values": values, "process": "spawned"}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
