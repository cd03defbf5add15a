"""Reproducer for record 679e1f4b2c709de8: "No available kernel. Aborting execution.".

The threads' case: code that allows only Flash attention (`sdpa_kernel(FLASH_ATTENTION)`) given
float32 inputs, which Flash does not take; the extra scenario passes an explicit `attn_mask`,
which Flash does not take either. The fix gives Flash half-precision inputs and allows the math
kernel as a fallback. On the CPU the same situation has another message, so the script
declares the cuda device only.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "679e1f4b2c709de8"
TARGET = Target(package="torch", version="2.13.0", module="torch.nn.functional", classes=())
DEVICES = ("cuda",)


def _qkv(device: str, dtype: object) -> object:
    import torch

    return torch.ones(1, 2, 8, 16, device=device, dtype=dtype)


def trigger(module: ModuleType, device: str) -> None:
    """Flash only, float32 inputs."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = _qkv(device, torch.float32)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        module.scaled_dot_product_attention(q, q, q)


def trigger_mask(module: ModuleType, device: str) -> None:
    """Flash only, an explicit attention mask."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = _qkv(device, torch.float16)
    mask = torch.ones(8, 8, dtype=torch.bool, device=device)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        module.scaled_dot_product_attention(q, q, q, attn_mask=mask)


def fix(module: ModuleType, device: str) -> dict:
    """Half-precision inputs, and the math kernel allowed as a fallback."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q = _qkv(device, torch.float16)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        out = module.scaled_dot_product_attention(q, q, q)
    require(tuple(out.shape) == (1, 2, 8, 16), f"output shape {tuple(out.shape)}")
    return {"dtype": str(out.dtype), "backends": ["FLASH_ATTENTION", "MATH"]}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"mask": trigger_mask}))
