"""Real tracebacks for the matching tests, made by running real code that raises.

The seed errors come from the real upstream releases: the CPU reproducers' trigger
tracebacks (vLLM 0.33.0), and for SGLang's CUDA pool, its real `_cancel_control_offset`
called on a pool that holds no occupied chunk (the bookkeeping that raises needs no GPU).
Ordinary Python errors come from a small module written to disk and run in a subprocess.
"""

import json
import subprocess
import sys
import textwrap
from functools import cache
from pathlib import Path

from app.config import PROJECT_ROOT

TIMEOUT_S = 300

_SGLANG_CANCEL = """
import importlib.util, sys, threading, traceback
sys.path.insert(0, {root!r})
from app import upstream
spec = importlib.util.spec_from_file_location("repro", {script!r})
repro = importlib.util.module_from_spec(spec)
spec.loader.exec_module(repro)
target = repro.TARGET
module = upstream.load_module(target.package, target.version, target.module, target.stubs)
pool = object.__new__(module.CudaVmmMemoryPool)
pool._lock = threading.Lock()
pool.occupied_chunks = []
try:
    pool._cancel_control_offset({offset})
except RuntimeError:
    traceback.print_exc()
"""

NESTED_PROGRAM = """
class WidgetError(RuntimeError):
    pass


REGISTRY = {"gear": 1}


def lookup(name):
    return REGISTRY[name]


def resolve(name):
    try:
        return lookup(name)
    except KeyError as error:
        raise WidgetError(f"no widget named {name} in registry") from error


def main():
    resolve("sprocket")


main()
"""


@cache
def reproducer_traceback(record_id: str) -> str:
    """The real traceback a CPU reproducer's trigger scenario raised."""
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "reproducers" / f"{record_id}.py"), "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=PROJECT_ROOT,
        check=False,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["trigger"]["traceback"]


@cache
def sglang_cancel_traceback(control_offset: int = 4096) -> str:
    """The real RuntimeError of SGLang 0.5.23's pool cancelling an offset it does not hold."""
    code = _SGLANG_CANCEL.format(
        root=str(PROJECT_ROOT),
        script=str(PROJECT_ROOT / "reproducers" / "edc4df790b100979.py"),
        offset=control_offset,
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert "Traceback" in done.stderr, done.stderr
    return done.stderr


def program_traceback(folder: Path, source: str = NESTED_PROGRAM) -> tuple[str, Path]:
    """Run a small program that dies with an uncaught exception; its stderr and path."""
    path = folder / "widgets" / "registry.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    return done.stderr, path
