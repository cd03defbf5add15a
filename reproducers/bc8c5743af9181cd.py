"""Reproducer for record bc8c5743af9181cd: "view size is not compatible with input tensor's ...".

Raised in C++ (view_impl's stride check) when `view` would merge dimensions that are not
adjacent in memory. The trigger is the top-k accuracy helper of the threads: `correct[:k]`,
a slice of a comparison of transposed predictions, flattened with `view(-1)`; the extra
scenario flattens a permuted feature map with `view(batch, -1)`. The fix uses `reshape`,
which copies when the layout needs it, and the counts equal those of a contiguous copy.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "bc8c5743af9181cd"
TARGET = Target(package="torch", version="2.13.0", module="torch", classes=("Tensor",))
DEVICES = ("cpu",)
TOP_K = 5


def _correct(module: ModuleType) -> object:
    """Which of the top-k predictions hit the target: (k, batch), transposed in memory."""
    generator = module.Generator().manual_seed(0)
    output = module.randn(8, 10, generator=generator)
    target = module.randint(0, 10, (8,), generator=generator)
    pred = output.topk(TOP_K, 1).indices.t()
    return pred.eq(target.view(1, -1).expand_as(pred))


def trigger(module: ModuleType, _device: str) -> None:
    """The classic accuracy helper: `correct[:k].view(-1)`."""
    _correct(module)[:TOP_K].view(-1)


def trigger_permuted(module: ModuleType, _device: str) -> None:
    """A channels-first feature map permuted to channels-last, flattened with view."""
    features = module.zeros(2, 3, 4, 4).permute(0, 2, 3, 1)
    features.view(features.size(0), -1)


def fix(module: ModuleType, _device: str) -> dict:
    """reshape gives the same values a contiguous copy gives."""
    correct = _correct(module)
    hits = correct[:TOP_K].reshape(-1).float().sum(0)
    expected = correct[:TOP_K].contiguous().view(-1).float().sum(0)
    require(bool(hits == expected), f"reshape counted {hits}, a contiguous copy {expected}")
    features = module.zeros(2, 3, 4, 4).permute(0, 2, 3, 1)
    flat = features.reshape(features.size(0), -1)
    require(tuple(flat.shape) == (2, 48), f"flattened to {tuple(flat.shape)}")
    return {"top_k_hits": int(hits), "flattened": list(flat.shape)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"permuted": trigger_permuted},
        )
    )
