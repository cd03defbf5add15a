"""Reproducer for record 0e3bc22a5ce53920: "CUDA error: misaligned address".

torch's own kernels check alignment before they vectorise, so the trigger does what a
faulty extension does: it hands torch a float32 CUDA buffer through
`__cuda_array_interface__` starting two bytes into a real allocation, and multiplies it; the
element-wise kernel's 4-byte loads fault and the next synchronising call raises. The context
is unusable afterwards, so the fix runs in a fresh process (a spawn pool): the same buffer
described from a float's boundary.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "0e3bc22a5ce53920"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cuda",)
FLOAT_BYTES = 4


class _Described:
    """Four float32 values of a CUDA buffer, `offset` bytes into it, as an extension
    describes them to torch."""

    def __init__(self, base: object, offset: int) -> None:
        self.base = base  # kept alive while torch reads it
        self.__cuda_array_interface__ = {
            "shape": (4,),
            "typestr": "<f4",
            "data": (base.data_ptr() + offset, False),
            "strides": None,
            "version": 2,
        }


def double_described() -> list[float]:
    """The fix, in a fresh process: the values described from the second float."""
    import torch

    base = torch.arange(8, dtype=torch.float32, device="cuda")
    return (torch.as_tensor(_Described(base, FLOAT_BYTES), device="cuda") * 2).tolist()


def trigger(module: ModuleType, device: str) -> None:
    """Two bytes into the buffer: every float the kernel loads straddles a boundary."""
    base = module.arange(8, dtype=module.float32, device=device)
    (module.as_tensor(_Described(base, 2), device=device) * 2).tolist()
    module.cuda.synchronize()


def fix(_module: ModuleType, _device: str) -> dict:
    """The buffer described from a float's boundary, doubled in a fresh process."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        values = pool.apply(double_described)
    require(values == [2.0, 4.0, 6.0, 8.0], f"doubled {values}")
    return {"offset_bytes": FLOAT_BYTES, "values": values, "process": "spawned"}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
