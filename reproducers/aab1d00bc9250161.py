"""Reproducer for record aab1d00bc9250161: "expected m1 and m2 to have the same dtype, but got:
{dtype1} != {dtype2}".

Raised in C++ by the CPU addmm kernel's dtype check: matrix products do not promote dtypes.
The CUDA kernel's check (Blas.cpp) says "mat1 and mat2" and is a site of its own, so this
script runs on the CPU only. The trigger is the threads' case: a bfloat16 weight
and a float16 activation through `F.linear` without a bias (the matrix product path); the
extra scenario is `torch.matmul` on float32 and float64. The fix casts the input to the
weight's dtype.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "aab1d00bc9250161"
TARGET = Target(package="torch", version="2.13.0", module="torch.nn.functional", classes=())
DEVICES = ("cpu",)


def trigger(module: ModuleType, device: str) -> None:
    """A float16 activation into a bfloat16 weight."""
    import torch

    x = torch.ones(3, 4, dtype=torch.float16, device=device)
    module.linear(x, torch.ones(2, 4, dtype=torch.bfloat16, device=device))


def trigger_matmul(_module: ModuleType, device: str) -> None:
    """float32 @ float64 (NumPy features into a float32 matrix)."""
    import torch

    torch.matmul(
        torch.ones(3, 4, device=device), torch.ones(4, 2, dtype=torch.float64, device=device)
    )


def fix(module: ModuleType, device: str) -> dict:
    """The activation cast to the weight's dtype."""
    import torch

    weight = torch.ones(2, 4, dtype=torch.bfloat16, device=device)
    x = torch.ones(3, 4, dtype=torch.float16, device=device).to(weight.dtype)
    out = module.linear(x, weight)
    require(out.dtype == torch.bfloat16, f"output dtype {out.dtype}")
    require(tuple(out.shape) == (3, 2), f"output shape {tuple(out.shape)}")
    return {"input": "float16 -> bfloat16", "output_dtype": str(out.dtype)}


if __name__ == "__main__":
    sys.exit(
        main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"matmul": trigger_matmul})
    )
