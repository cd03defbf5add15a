"""Reproducer for record 54f572eb27be7a91: "Torch not compiled with CUDA enabled".

torch.cuda._lazy_init, which the first CUDA use runs, raises when the torch binary has no
CUDA in it. The trigger asks for a CUDA tensor, as code that assumes a GPU does; the extra
scenario moves a module with .cuda(). The fix chooses the device from
torch.cuda.is_available(): the same model and batch then run on the CPU.

Needs torch's CPU-only build (the pinned release as the CI installs it): a CUDA build cannot
raise this, so there the scenario is an error, never a pass or a failure.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require
from app.upstreams.release_errors import UpstreamError

RECORD_ID = "54f572eb27be7a91"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.cuda",
    classes=(),
)
DEVICES = ("cpu",)


def _cpu_only_build() -> None:
    import torch

    if torch.version.cuda is not None:
        raise UpstreamError(
            f"this scenario needs torch's CPU-only build; torch {torch.__version__} "
            f"was built with CUDA {torch.version.cuda}"
        )


def trigger(_module: ModuleType, _device: str) -> None:
    """A tensor created on the GPU unconditionally."""
    import torch

    _cpu_only_build()
    torch.zeros(2, 4, device="cuda")


def trigger_module_cuda(_module: ModuleType, _device: str) -> None:
    """A model moved with .cuda()."""
    import torch

    _cpu_only_build()
    torch.nn.Linear(4, 2).cuda()


def fix(module: ModuleType, _device: str) -> dict:
    """The device chosen from availability; the model runs where this torch can run it."""
    import torch

    device = torch.device("cuda" if module.is_available() else "cpu")
    model = torch.nn.Linear(4, 2).to(device)
    out = model(torch.zeros(3, 4, device=device))
    require(out.shape == (3, 2), f"the model returned shape {tuple(out.shape)}")
    require(out.device.type == device.type, f"the output is on {out.device}, not {device}")
    return {"device": device.type, "cuda_build": torch.version.cuda, "output": list(out.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"module_cuda": trigger_module_cuda},
        )
    )
