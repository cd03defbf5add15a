"""Real tracebacks for the matching tests, made by running real code that raises.

The seed errors come from the real upstream releases: the CPU reproducers' trigger
tracebacks (vLLM 0.33.0), and for SGLang's CUDA pool, its real `_cancel_control_offset`
called on a pool that holds no occupied chunk (the bookkeeping that raises needs no GPU).
Each was recorded once in tests/fixtures/tracebacks/, so the matching and API tests run
offline; tests/test_reproducers.py runs the real code again (`live_*`, marked network) and
fails when a recording no longer is what the release raises.
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
from tests.helpers.releases import RELEASES
sys.path.insert(0, {root!r})
spec = importlib.util.spec_from_file_location("repro", {script!r})
repro = importlib.util.module_from_spec(spec)
spec.loader.exec_module(repro)
target = repro.TARGET
module = RELEASES.load_module(target.package, target.version, target.module, target.stubs)
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


RECORDED = Path(__file__).parent.parent / "fixtures" / "tracebacks"


def reproducer_traceback(record_id: str) -> str:
    """The traceback a CPU reproducer's trigger scenario raised, as recorded."""
    return (RECORDED / f"{record_id}.txt").read_text()


def sglang_cancel_traceback(control_offset: int = 4096) -> str:
    """SGLang 0.5.23's pool cancelling an offset it does not hold, as recorded."""
    return (RECORDED / f"edc4df790b100979-{control_offset}.txt").read_text()


RECORDED_SGLANG_OFFSETS = (4096, 8192)


@cache
def live_reproducer_traceback(record_id: str) -> str:
    """The real traceback a CPU reproducer's trigger scenario raises now."""
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
def live_sglang_cancel_traceback(control_offset: int = 4096) -> str:
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


SEED_TRACEBACKS = {
    "c53f6de81577a6bc": lambda: reproducer_traceback("c53f6de81577a6bc"),
    "b6bab2e17ae18394": lambda: reproducer_traceback("b6bab2e17ae18394"),
    "edc4df790b100979": lambda: sglang_cancel_traceback(4096),
}
SEED_CLASSES = {
    "c53f6de81577a6bc": "RuntimeError",
    "b6bab2e17ae18394": "MemoryError",
    "edc4df790b100979": "RuntimeError",
}
LOG_LINE = "INFO 08-14 12:00:{:02d} [scheduler.py:{}] Avg prompt throughput: {} tokens/s"


def _prefixed(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _interleave(first: str, second: str) -> str:
    a = _prefixed(first, "(EngineCore_DP0 pid=1234) ERROR 08-14 12:00:01 [core.py:710] ")
    b = _prefixed(second, "(EngineCore_DP1 pid=5678) ERROR 08-14 12:00:01 [core.py:710] ")
    a_lines, b_lines = a.splitlines(), b.splitlines()
    merged = []
    for i in range(max(len(a_lines), len(b_lines))):
        merged += a_lines[i : i + 1] + b_lines[i : i + 1]
    return "\n".join(merged)


def _cut_frames(text: str) -> str:
    lines = text.splitlines()
    frame_starts = [i for i, line in enumerate(lines) if line.lstrip().startswith("File ")]
    first, last = frame_starts[0], frame_starts[-1]
    return "\n".join(
        [*lines[: first + 2], "  [Previous line repeated 996 more times]", "  ...", *lines[last:]]
    )


def _in_log(text: str) -> str:
    noise = [LOG_LINE.format(n % 60, 100 + n, n * 3) for n in range(200)]
    return "\n".join(noise[:100] + text.splitlines() + noise[100:])


def noise_variants(traceback_text: str, other: str) -> dict[str, str]:
    """The same real traceback as real logs show it."""
    return {
        "plain": traceback_text,
        "vllm": _prefixed(
            traceback_text, "(EngineCore_DP0 pid=1234) ERROR 08-14 12:00:01 [core.py:710] "
        ),
        "rank": _prefixed(traceback_text, "[rank0]: "),
        "ray": _prefixed(traceback_text, "(RayWorkerWrapper pid=5678) "),
        "timestamp": _prefixed(traceback_text, "2026-08-14 12:00:01,123 ERROR "),
        "ansi": _prefixed(traceback_text, "\x1b[31m").replace("\n", "\x1b[0m\n") + "\x1b[0m",
        "crlf": traceback_text.replace("\n", "\r\n"),
        "interleaved": _interleave(traceback_text, other),
        "two_tracebacks": other + "\n" + traceback_text,
        "cut_frames": _cut_frames(traceback_text),
        "last_line": traceback_text.strip().splitlines()[-1],
        "in_200_lines_of_log": _in_log(traceback_text),
    }
