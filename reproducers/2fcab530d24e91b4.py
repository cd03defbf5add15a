"""Reproducer for record 2fcab530d24e91b4: "Index put requires the source and destination dtypes
match, got {destination} for the destination and {source} for the source."

Raised in C++ (the index-put iterator's dtype check): advanced-indexing assignment does not
cast. The trigger writes float16 features into a float32 buffer by index, as mixed-precision
code does; the extra scenario writes through a boolean mask. The fix casts the values to the
buffer's dtype.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "2fcab530d24e91b4"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cpu", "cuda")


def trigger(module: ModuleType, device: str) -> None:
    """float16 values into a float32 buffer through an index tensor."""
    buffer = module.zeros(4, 3, device=device)
    buffer[module.tensor([0, 2], device=device)] = module.ones(
        2, 3, dtype=module.float16, device=device
    )


def trigger_mask(module: ModuleType, device: str) -> None:
    """float64 values through a boolean mask."""
    buffer = module.zeros(4, device=device)
    mask = module.tensor([True, False, True, False], device=device)
    buffer[mask] = module.ones(2, dtype=module.float64, device=device)


def fix(module: ModuleType, device: str) -> dict:
    """The values cast to the destination's dtype."""
    buffer = module.zeros(4, 3, device=device)
    values = module.ones(2, 3, dtype=module.float16, device=device)
    buffer[module.tensor([0, 2], device=device)] = values.to(buffer.dtype)
    require(buffer.dtype == module.float32, f"buffer dtype {buffer.dtype}")
    require(float(buffer.sum()) == 6.0, f"buffer sum {float(buffer.sum())}")
    return {"values": "float16 -> float32", "rows_written": 2}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"mask": trigger_mask}))
