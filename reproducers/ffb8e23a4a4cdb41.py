"""Reproducer for record ffb8e23a4a4cdb41: "CUDA error: operation not permitted when stream is
capturing".

The threads' case: a host synchronisation inside CUDA graph capture. The trigger captures a
small computation and reads a value with `.item()` during the capture; the extra scenario
calls `torch.cuda.synchronize()` there. Each ends the failed capture (its own error, the
capture invalidated, is not the one reported). The fix warms up on a side stream, captures
without reading anything back, replays, and reads the result after the replay.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import contextlib
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "ffb8e23a4a4cdb41"
TARGET = Target(package="torch", version="2.13.0", module="torch.cuda", classes=("CUDAGraph",))
DEVICES = ("cuda",)


def _capture_calling(module: ModuleType, device: str, host_call: str) -> None:
    """Capture `x * 2`, then make a host call inside the capture."""
    import torch

    x = torch.ones(4, device=device)
    graph = module.CUDAGraph()
    stream = module.Stream()
    with module.stream(stream):
        graph.capture_begin()
        try:
            y = x * 2
            if host_call == "item":
                y.sum().item()
            else:
                module.synchronize()
        finally:
            with contextlib.suppress(RuntimeError):  # invalidated by the error being raised
                graph.capture_end()


def trigger(module: ModuleType, device: str) -> None:
    """`.item()` during capture."""
    _capture_calling(module, device, "item")


def trigger_synchronize(module: ModuleType, device: str) -> None:
    """`torch.cuda.synchronize()` during capture."""
    _capture_calling(module, device, "synchronize")


def fix(module: ModuleType, device: str) -> dict:
    """Warm up, capture without host reads, replay, read afterwards."""
    import torch

    x = torch.ones(4, device=device)
    stream = module.Stream()
    stream.wait_stream(module.current_stream())
    with module.stream(stream):
        total = (x * 2).sum()
    module.current_stream().wait_stream(stream)
    graph = module.CUDAGraph()
    with module.graph(graph):
        total = (x * 2).sum()
    graph.replay()
    module.synchronize()
    require(float(total) == 8.0, f"replayed sum {float(total)}")
    return {"captured": "x * 2, sum", "replayed_sum": float(total)}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"synchronize": trigger_synchronize},
        )
    )
