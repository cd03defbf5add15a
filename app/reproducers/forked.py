"""Generated scripts of one release, each run in a child forked from a process that
imported the release once.

A generated script spends nearly all its seconds importing torch, errkb's matcher and its
target module, and thousands of them share one release. The zygote (`Zygote`: a `python -c`
process with the release's environment) imports the harness, torch and, for torch, its top
package once, and answers a line when ready or the first line of why it cannot import them.
Then, for each script it is sent, it forks a child that runs the script as `__main__`, as
`python script.py --device cpu` would, in a process group of its own, its output in a file,
killed at the time limit (`--device cuda --torch installed` where a GPU machine runs them).
A generated script calls upstream code with values a search chose (an empty path among
them), so each child runs in its script's own scratch folder, which is also its HOME and
holds its TMPDIR and torch's and Triton's caches: what the call writes or removes "here" is
that folder, never the caller's checkout, and no state it leaves on disk reaches the next.
Nothing flows back into the zygote from a child but its exit status and the names of the
modules it imported (its target module, and what torch's optimizers import on first use,
torch._dynamo, a long import): the zygote imports those too, so the next child finds them
imported; scripts come in module order. Each script still runs in a process of its own, from
the imported state.
"""

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from app.reproducers import runner

READY = "ready"

# Runs in the zygote: stdin gives one JSON request a line, stdout answers one JSON line each.
_ZYGOTE = r"""
import importlib, json, os, runpy, signal, sys, tempfile, time
from app.config import Settings
from app.reproducers import harness
from app.upstreams.release_cache import Upstream

package, version, *module = sys.argv[1:]


def failed(exc):
    cause = exc.__cause__ or exc
    first = (str(cause).splitlines() or [type(cause).__name__])[0]
    return {"status": "error", "error": first[:200]}


def loaded(name):
    try:
        target = harness.Target(package, version, name, (), package_inits=True)
        harness.load_target(releases, target)
        return {"status": "ready"}
    except Exception as exc:
        return failed(exc)


try:
    import torch  # what every target imports; its own check (torch's version) stays the scripts'
    releases = Upstream(Settings().cache_dir)
    environment = releases.environment_dir(package, version)
    if environment.is_dir():
        sys.path.append(str(environment))
    answer = loaded(module[0]) if module else {"status": "ready"}
except Exception as exc:
    answer = failed(exc)
print(json.dumps(answer), flush=True)
if answer["status"] != "ready":
    sys.exit(0)
for line in sys.stdin:
    request = json.loads(line)
    if "load" in request:  # a script's target module, imported before its scripts fork
        print(json.dumps(loaded(request["load"])), flush=True)
        continue
    start = time.perf_counter()
    output = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    child = os.fork()
    if child == 0:
        status = 2
        try:
            before = set(sys.modules)
            os.setpgid(0, 0)
            os.dup2(output, 1)
            os.dup2(output, 2)
            sys.stdout = os.fdopen(1, "w", closefd=False)
            sys.stderr = os.fdopen(2, "w", closefd=False)
            os.environ["ERRKB_DATA_DIR"] = request["data_dir"]
            os.chdir(request["data_dir"])  # a scratch folder: paths left empty land here
            os.environ["HOME"] = request["data_dir"]
            os.environ.update(request["environment"])
            tempfile.tempdir = None  # read TMPDIR again
            signal.alarm(request["timeout"])
            sys.argv = [request["script"], *request["args"]]
            runpy.run_path(request["script"], run_name="__main__")
            status = 0
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            with open(request["output"] + ".modules", "w") as listing:
                listing.write("\n".join(sorted(set(sys.modules) - before)))
            os._exit(status)
    os.close(output)
    _, code = os.waitpid(child, 0)
    try:
        os.killpg(child, signal.SIGKILL)  # what the script left running in its group
    except OSError:
        pass
    try:  # what the child imported late (torch._dynamo), the next child finds imported
        with open(request["output"] + ".modules") as listing:
            for name in listing.read().split():
                try:
                    if name.split(".")[0] == package:  # its parents registered as the scripts do
                        target = harness.Target(package, version, name, (), package_inits=True)
                        harness.load_target(releases, target)
                    else:
                        importlib.import_module(name)
                except BaseException:
                    pass
    except OSError:
        pass
    print(json.dumps({
        "code": os.waitstatus_to_exitcode(code),
        "alarm": os.WIFSIGNALED(code) and os.WTERMSIG(code) == signal.SIGALRM,
        "seconds": time.perf_counter() - start,
    }), flush=True)
"""


class ZygoteGone(RuntimeError):
    """The zygote stopped answering (it crashed, or a child took it down)."""


@dataclass(frozen=True, slots=True)
class Script:
    """One generated script to run: its file, and the folder holding its record, where it
    runs (a scratch folder of its own)."""

    record_id: str
    path: Path
    data_dir: Path


class Zygote:
    """A process that imported torch and a module of a release (torch's own top package,
    run as installed; none of an unpacked release, whose parents the scripts register as
    they load); it forks a child per script.

    `error` is why the module could not be imported (no script then runs); each `run` is
    one child, its outcome shaped as `runner.run_reproducer` shapes a subprocess's."""

    def __init__(
        self,
        package: str,
        version: str,
        module: str | None,
        environment: dict[str, str],
        import_timeout_s: float,
    ) -> None:
        self.error: str | None = None
        self._pending = b""
        self._process = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, package, version, *([module] if module else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )
        answer = self._answer(import_timeout_s)
        if answer is None:
            self.error = "the import ended the process"
        elif answer.get("status") != READY:
            self.error = str(answer.get("error") or "the import failed")

    def _answer(self, timeout_s: float) -> dict | None:
        """The zygote's next answer line; None when it died or took longer than the limit."""
        stdout: IO[bytes] | None = self._process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout_s
        while True:
            line, newline, rest = self._pending.partition(b"\n")
            if newline:
                self._pending = rest
                try:
                    answer = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a module printed at import time
                if isinstance(answer, dict):
                    return answer
                continue
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                return None
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                return None
            self._pending += chunk

    def load(self, module: str, timeout_s: float) -> str | None:
        """Import a target module of the release in the zygote, outside any script's time
        limit (its children then find it imported); why it cannot be imported, or None.
        Raises ZygoteGone when the import ended the zygote or took longer than the limit."""
        if self.error is not None or self._process.stdin is None:
            raise ZygoteGone(self.error or "no zygote")
        try:
            self._process.stdin.write(json.dumps({"load": module}).encode() + b"\n")
            self._process.stdin.flush()
        except OSError as error:
            raise ZygoteGone(str(error)) from error
        answer = self._answer(timeout_s)
        if answer is None:
            raise ZygoteGone(f"importing {module} ended the zygote or took over {timeout_s:g} s")
        return None if answer.get("status") == READY else str(answer.get("error"))

    def run(
        self, script: Script, timeout_s: float, args: tuple[str, ...] = ("--device", "cpu")
    ) -> runner.RunOutcome:
        """Run one script in a forked child, with these arguments (`python script.py
        --device cpu`), and read its result protocol."""
        if self.error is not None or self._process.stdin is None:
            raise ZygoteGone(self.error or "no zygote")
        started_at = datetime.now(UTC)
        output = script.path.with_suffix(".out")
        request = {
            "script": str(script.path),
            "data_dir": str(script.data_dir),
            "environment": runner.scratch_environment(script.data_dir),
            "output": str(output),
            "timeout": max(1, round(timeout_s)),
            "args": list(args),
        }
        try:
            self._process.stdin.write(json.dumps(request).encode() + b"\n")
            self._process.stdin.flush()
        except OSError as error:
            raise ZygoteGone(str(error)) from error
        answer = self._answer(timeout_s + 30)
        if answer is None:
            raise ZygoteGone("the zygote stopped answering")
        text = output.read_text(encoding="utf-8", errors="replace") if output.is_file() else ""
        if answer.get("alarm"):
            status, reason, result = "error", f"timed out after {timeout_s:g} s", None
        else:
            result = runner.last_json_line(text)
            if result is None:
                status = "error"
                reason = f"exited with {answer.get('code')} and printed no result"
            else:
                status, reason = result["status"], result.get("reason", "")
        return runner.RunOutcome(
            record_id=script.record_id,
            device=(result or {}).get("device") or "cpu",
            status=status,
            reason=reason,
            duration_s=round(float(answer.get("seconds", 0.0)), 3),
            output_tail=text[-runner.OUTPUT_TAIL_CHARS :],
            result=result,
            started_at=started_at,
        )

    def close(self) -> None:
        """End the zygote (its stdin closed, then killed if it lingers)."""
        if self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, 9)
            self._process.wait()

    def __enter__(self) -> "Zygote":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
