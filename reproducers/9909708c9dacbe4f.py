"""Reproducer for record 9909708c9dacbe4f: "backend='...' raised:\n{class}: {text}".

Raised by dynamo (`OutputGraph._call_user_compiler`) when the backend given to torch.compile
fails on a captured graph. The trigger is the corpus case's kind of failure on CPU: a backend
whose import of its compiler fails (inductor's `triton_key` import from a mismatched triton
needs a GPU setup); the extra scenario is a custom backend that returns nothing. The fix keeps
the failing backend and sets `torch._dynamo.config.suppress_errors`, so the frame runs
eagerly, and a working backend ("eager") compiles the same function; both give eager's result.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "9909708c9dacbe4f"
TARGET = Target(
    package="torch", version="2.13.0", module="torch._dynamo.output_graph", classes=("OutputGraph",)
)
DEVICES = ("cpu",)


def _fn(x: object) -> object:
    import torch

    return torch.sin(x) + 1


def compile_with_missing_compiler(_gm: object, _example_inputs: object) -> object:
    """A backend whose compiler module cannot be imported, as inductor's triton import fails."""
    import importlib

    return importlib.import_module("errkb_missing_compiler")


def returns_nothing(_gm: object, _example_inputs: object) -> None:
    """A custom backend that forgot to return the compiled function."""


def _compiled(backend: object) -> object:
    import torch

    torch._dynamo.reset()
    return torch.compile(_fn, backend=backend)(torch.zeros(3))


def trigger(_module: ModuleType, _device: str) -> None:
    """The backend's ImportError, wrapped by dynamo."""
    _compiled(compile_with_missing_compiler)


def trigger_not_callable(_module: ModuleType, _device: str) -> None:
    """A backend that returns None."""
    _compiled(returns_nothing)


def fix(_module: ModuleType, _device: str) -> dict:
    """suppress_errors runs the failing frame eagerly; a working backend compiles it."""
    import torch

    expected = _fn(torch.zeros(3))
    with torch._dynamo.config.patch(suppress_errors=True):
        fallback = _compiled(compile_with_missing_compiler)
    require(torch.equal(fallback, expected), f"fallback gave {fallback.tolist()}")
    working = _compiled("eager")
    require(torch.equal(working, expected), f"the eager backend gave {working.tolist()}")
    return {"suppressed": fallback.tolist(), "eager_backend": working.tolist()}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"not_callable": trigger_not_callable},
        )
    )
