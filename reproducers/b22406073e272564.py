"""Reproducer for record b22406073e272564: "CUDA error: no kernel image is available for execution
on the device".

Only a GPU whose architecture the installed torch was not built for raises it: the trigger runs
one element-wise kernel there. On any GPU the wheel supports the run is skipped with that
reason (`hardware`), as it is on a machine without CUDA. The fix is another wheel; what the
script can check is the computation where the wheel does run (the CPU) and the comparison the
record advises (`get_device_capability` against `get_arch_list`).

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "b22406073e272564"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=())
DEVICES = ("cuda",)


def _architecture(module: ModuleType) -> str:
    major, minor = module.get_device_capability()
    return f"sm_{major}{minor}"


def built_for_this_gpu(module: ModuleType, _device: str) -> str | None:
    """Why this GPU cannot raise it: the wheel holds kernels for its architecture."""
    if _architecture(module) in module.get_arch_list():
        return (
            f"torch was built for this GPU ({_architecture(module)} is in {module.get_arch_list()})"
        )
    return None


def trigger(_module: ModuleType, device: str) -> None:
    """One element-wise kernel on a GPU the wheel has no kernels for."""
    import torch

    (torch.ones(4, device=device) * 2).sum().item()


def fix(module: ModuleType, _device: str) -> dict:
    """Where the wheel has kernels (the CPU) the computation runs; the check names the gap."""
    import torch

    total = float((torch.ones(4) * 2).sum())
    require(total == 8.0, f"sum {total}")
    return {"gpu": _architecture(module), "wheel": module.get_arch_list(), "cpu_result": total}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, hardware=built_for_this_gpu))
