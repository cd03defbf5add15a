"""Reproducer for record 174e3825035699b3: "Bfloat16 is only supported on GPUs with compute
capability of at least 8.0. Your {gpu} GPU has compute capability {x.y}. ...".

Each GPU worker asks the platform whether the model's dtype runs on its device:
`CudaPlatform.check_if_supports_dtype` raises for bfloat16 below compute capability 8.0.
The trigger is that call for a bfloat16 model, as the worker makes it on a Tesla T4, V100
or RTX 20xx; the fix is `--dtype half`: float16 passes the same check, and a float16
matmul runs on the GPU.

Needs CUDA and a GPU below compute capability 8.0: on a newer GPU bfloat16 is supported
and the check cannot raise, so the run is skipped there with that reason (`hardware`), as it
is on a machine without CUDA. vllm._C_stable_libtorch, the compiled custom ops that
vllm/platforms/cuda.py imports to register them, is stubbed (an empty module): the sdist has
no compiled extensions, and the check never calls an op.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "174e3825035699b3"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.platforms.cuda",
    classes=("CudaPlatform",),
    stubs={"vllm._C_stable_libtorch": ()},
    requirements=True,
)
DEVICES = ("cuda",)


def bfloat16_unsupported(module: ModuleType, _device: str) -> str | None:
    """Why this GPU cannot raise the error: it supports bfloat16 (8.0 or above)."""
    platform = module.CudaPlatform
    if platform.has_device_capability(80):
        capability = platform.get_device_capability().as_version_str()
        return (
            f"needs a GPU below compute capability 8.0 (T4, V100, RTX 20xx); "
            f"this {platform.get_device_name()} has {capability} and supports bfloat16"
        )
    return None


def trigger(module: ModuleType, _device: str) -> None:
    """A bfloat16 model's dtype, checked as the worker checks it."""
    import torch

    module.CudaPlatform.check_if_supports_dtype(torch.bfloat16)


def fix(module: ModuleType, _device: str) -> dict:
    """--dtype half: the check passes and float16 computes on this GPU."""
    import torch

    module.CudaPlatform.check_if_supports_dtype(torch.float16)
    a = torch.ones((64, 64), dtype=torch.float16, device="cuda")
    total = (a @ a).sum().item()
    require(total == 64.0**3, f"the float16 matmul summed to {total}")
    return {"dtype": "float16", "capability": module.CudaPlatform.get_device_capability()}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, hardware=bfloat16_unsupported))
