"""Shared mechanics of the scripts in reproducers/: arguments, checks, the result, exit codes.

A reproducer declares its record, its upstream target and the devices it runs on, and
writes only its scenario: a trigger that must raise the record's error and a fix that must
raise nothing and leave the upstream object sound. `main` loads the real upstream module
(app.upstreams.release_cache), runs the checks, prints the result protocol (one JSON object on
the last stdout line, see reproducers/README.md) and returns the exit code.

Torch-free: torch is imported by the upstream modules, and here only lazily, to ask whether
CUDA is there, so the runner and the tests can import this module without it.
"""

import argparse
import contextlib
import importlib
import json
import os
import platform
import subprocess
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from app import upstreams
from app.config import Settings
from app.matching import native
from app.matching.candidate import candidate_from
from app.matching.index import MAX_SUBJECT_CHARS, PatternIndex
from app.matching.matcher import RaiseSites
from app.matching.service import find_matches
from app.records.model import ErrorRecord, parse_record
from app.records.site_keys import short_class
from app.upstreams import distribution_metadata, release_cache, release_errors

EXIT_CODES = {"passed": 0, "failed": 1, "error": 2, "skipped": 3}
DEVICE_CHOICES = ("auto", "cpu", "cuda")
TORCH_CHOICES = ("pinned", "installed")
# environment problems (missing module, wrong stub list): an error, never a pass or a failure
ENVIRONMENT_ERRORS = (ImportError, release_errors.UpstreamError, release_errors.StubUsedError)

Trigger = Callable[[ModuleType, str], object]
Fix = Callable[[ModuleType, str], dict[str, Any]]


@dataclass(frozen=True)
class Target:
    """The upstream release, module and classes a reproducer exercises; `stubs` (listed in the
    result, so a reader knows what was fake) as Upstream.load_module takes them."""

    package: str
    version: str
    module: str
    classes: tuple[str, ...]
    stubs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The names a module imports that its tested classes never use; and whether packages below
    # the top one run their __init__ as in a plain import (generated scripts) or stay empty.
    package_inits: bool = False
    # The release the reproducer was written for, when it runs on another (`--torch
    # installed`); None when it runs on the one it names.
    pinned: str | None = None
    # Whether the target imports more than errkb's environment has (vLLM's config package:
    # transformers, pyzmq, cbor2...): what it imports at load is then found from its code and
    # installed once, at the versions the release asks for, into the cached environment.
    requirements: bool = False

    def describe(self) -> dict[str, Any]:
        """The result's "target" object."""
        described = {
            "package": self.package,
            "version": self.version,
            "module": self.module,
            "classes": list(self.classes),
        }
        return described | ({"pinned": self.pinned} if self.pinned else {})

    def stubbed(self) -> list[str]:
        """Each stubbed name as "module:name"."""
        return [f"{module}:{name}" for module, names in self.stubs.items() for name in names]


class CheckFailed(AssertionError):
    """A fix left the upstream object in an unsound state; the message says which."""


def require(condition: bool, detail: str) -> None:
    """Fail the running fix check with `detail` unless `condition` holds."""
    if not condition:
        raise CheckFailed(detail)


def expected_record(data_dir: Path, record_id: str) -> ErrorRecord:
    """The record a reproducer proves, read from data/records/<id>.json."""
    return parse_record((data_dir / f"{record_id}.json").read_text(encoding="utf-8"))


def _format(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def check_error(record: ErrorRecord, exc: BaseException) -> dict[str, Any]:
    """Whether `exc` is the record's error, judged by the project's own matcher.

    The real formatted traceback goes through the same pipeline as a user's paste (parse,
    pattern index, ranking), with this record as the only candidate: it passes when the
    traceback's last exception has the record's class and the record's messagePattern
    matches that exception's whole message, as far as the matcher reads it (`_matches_whole`).
    The real formatted traceback is kept in the result.

    A message that starts on the line after the class, or that carries a child process's own
    traceback (spawn's ProcessRaisedException, the elastic launcher's ChildFailedError), is
    not what a parser reads as the last exception line: for such a message the raised object
    itself must have the record's class and fully match the pattern, and the matcher must
    still put this record first for the whole traceback.

    A record whose message is one value and no text (a bare `assert x is not None`, raised
    with no message; `raise InternalError(msg)`) has no pattern the matcher takes: it must
    then find the record by its raise site, the traceback's innermost frame, as it answers
    such a paste.
    """
    record_id = record.id
    text = _format(exc)
    index = PatternIndex([(record_id, record.message_pattern)], backend="portable")
    candidate = candidate_from(record, "reviewed", None)
    exceptions, matches = find_matches(
        index, text, lambda _ids: {record_id: candidate}, sites=_raise_site(record)
    )
    last = exceptions[-1] if exceptions else None
    class_ok = last is not None and last.error_class == short_class(record.error_class)
    top = matches[0] if matches else None
    unread = record_id not in index  # no text to read: found by its raise site only
    message_ok = (
        last is not None
        and top is not None
        and top.id == record_id
        and top.exception_index == last.index
        and (unread or _matches_whole(index, record_id, last.message))
    )
    if not (class_ok and message_ok) and "\n" in str(exc):
        class_ok = type(exc).__name__ == short_class(record.error_class)
        message_ok = (
            top is not None and top.id == record_id and _matches_whole(index, record_id, str(exc))
        )
    if class_ok and message_ok and unread:
        detail = (
            f"raised {record.error_class}; the record's message is one value and no text,"
            " which no pattern reads: the matcher finds this record by its raise site, the"
            " traceback's innermost frame"
        )
    elif class_ok and message_ok:
        detail = f"raised {record.error_class}; the matcher finds this record for it"
    elif not class_ok:
        detail = f"raised {type(exc).__name__}, the record says {record.error_class}"
    else:
        detail = f"the matcher does not match the message to {record.message_pattern!r}"
    return {
        "status": "passed" if class_ok and message_ok else "failed",
        "detail": detail,
        "errorClass": type(exc).__name__,
        "message": str(exc),
        "captures": top.captures if top is not None and message_ok else {},
        "traceback": text,
    }


def _raise_site(record: ErrorRecord) -> RaiseSites:
    """The record's own raise site, as the service knows every harvested one: a traceback
    whose innermost frame is that line finds the record whatever its message says."""
    if record.file_path is None or record.line_number is None:
        return {}
    name = record.file_path.rpartition("/")[2]
    return {(name, record.line_number): [(record.id, record.file_path)]}


def _matches_whole(index: PatternIndex, record_id: str, message: str) -> bool:
    """Whether the record's pattern matches the whole message, as far as the matcher reads it.

    The index reads a message's first MAX_SUBJECT_CHARS only, so a longer one (vLLM's list of
    every supported architecture runs to 11,000 characters) is judged by a match that starts
    at its beginning within them. The tail torch appends to every CUDA error is not read.
    A record whose pattern the index does not take (no text) matches no message."""
    if record_id not in index:
        return False
    message = native.without_tail(message) or message
    if len(message) <= MAX_SUBJECT_CHARS:
        return index.match(record_id, message, full=True) is not None
    found = index.match(record_id, message)
    return found is not None and found.span[0] == 0


def _environment_error(exc: BaseException) -> dict:
    """The result of a run that the environment stopped (a missing device or library), not
    the record's error or its fix."""
    return {"status": "error", "detail": f"{type(exc).__name__}: {exc}", "traceback": _format(exc)}


def _run_trigger(record: ErrorRecord, trigger: Trigger, module: ModuleType, device: str) -> dict:
    try:
        trigger(module, device)
    except ENVIRONMENT_ERRORS as exc:
        return _environment_error(exc)
    except Exception as exc:
        return check_error(record, exc)
    return {"status": "failed", "detail": "the trigger scenario raised nothing"}


def _run_fix(fix: Fix, module: ModuleType, device: str) -> dict:
    try:
        state = fix(module, device)
    except CheckFailed as exc:
        return {"status": "failed", "detail": str(exc)}
    except ENVIRONMENT_ERRORS as exc:
        return _environment_error(exc)
    except Exception as exc:
        return {
            "status": "failed",
            "detail": f"the fix raised {type(exc).__name__}: {exc}",
            "errorClass": type(exc).__name__,
            "message": str(exc),
            "traceback": _format(exc),
        }
    return {"status": "passed", "detail": "nothing raised and the state is sound", "state": state}


def _timed(run: Callable[[], dict]) -> dict:
    start = time.perf_counter()
    outcome = run()
    outcome["seconds"] = round(time.perf_counter() - start, 3)
    return outcome


def _skip_reason(device: str, devices: Sequence[str]) -> str | None:
    """Why the run cannot happen on `device`; None when it can."""
    if device not in devices:
        return f"this reproducer runs on {' or '.join(devices)}, not {device}"
    if device == "cuda":
        torch = importlib.import_module("torch")
        if not torch.cuda.is_available():
            return (
                f"needs a CUDA device; torch {torch.__version__}: "
                "torch.cuda.is_available() is False"
            )
    return None


def _nvidia_driver() -> str | None:
    """The NVIDIA driver's version, as nvidia-smi reports it; None without nvidia-smi."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", "-i", "0"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = done.stdout.strip().splitlines()
    return found[0].strip() if done.returncode == 0 and found else None


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what the platform module says."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine(device: str) -> dict[str, Any]:
    """What the run runs on, for the result's "machine": the GPU (name, memory, driver,
    compute capability) on cuda, the CPU otherwise. A run is only as good as where it ran:
    the record page says "Reproduced on NVIDIA H200 (...)" from this."""
    if device == "cuda":
        torch = importlib.import_module("torch")
        properties = torch.cuda.get_device_properties(torch.cuda.current_device())
        return {
            "kind": "gpu",
            "name": properties.name,
            "memoryMiB": properties.total_memory // 2**20,
            "driver": _nvidia_driver(),
            "computeCapability": f"{properties.major}.{properties.minor}",
        }
    return {
        "kind": "cpu",
        "name": _cpu_model(),
        "platform": platform.machine() or None,
        "cores": os.cpu_count(),
    }


def _overall(checks: list[dict]) -> tuple[str, str]:
    for status in ("error", "failed"):
        bad = [check for check in checks if check["status"] == status]
        if bad:
            return status, "; ".join(f"{check['name']}: {check['detail']}" for check in bad)
    return "passed", "the trigger raised the record's error and the fix held"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run one errkb reproducer against upstream.")
    parser.add_argument(
        "--device",
        choices=DEVICE_CHOICES,
        default="auto",
        help="device to run on; auto takes the reproducer's first device",
    )
    parser.add_argument(
        "--torch",
        choices=TORCH_CHOICES,
        default="pinned",
        help="pinned: run only on the torch release the reproducer names; installed: on "
        "whatever release is installed (a GPU machine's own), named in the result",
    )
    parser.add_argument(
        "--bundle",
        type=Path,
        metavar="CACHE_DIR",
        help="only copy the loaded upstream files into CACHE_DIR (a cache "
        "directory layout, for a GPU machine without network) and exit",
    )
    return parser.parse_args(argv)


def main(
    record_id: str,
    target: Target,
    devices: Sequence[str],
    trigger: Trigger,
    fix: Fix,
    extra_triggers: Mapping[str, Trigger] | None = None,
    argv: Sequence[str] | None = None,
    hardware: Callable[[ModuleType, str], str | None] | None = None,
) -> int:
    """Run a reproducer from the command line; prints the result, returns the exit code.

    `extra_triggers` are further trigger scenarios from the record, each checked like the
    trigger and reported under "extra". `hardware` says why the device at hand cannot raise
    the record's error (a check on old GPUs only), or None: the run is then skipped with
    that reason, as for a missing device. The script is an entry point: its settings
    (ERRKB_DATA_DIR, ERRKB_CACHE_DIR, which the runner passes on) are read here.
    """
    args = _parse(argv)
    if args.torch == "installed":
        target = on_installed(target)
    settings = Settings()
    releases = release_cache.Upstream(settings.cache_dir)
    start = time.perf_counter()
    device = devices[0] if args.device == "auto" else args.device
    result: dict[str, Any] = {
        "id": record_id,
        "target": target.describe(),
        "device": device,
        "stubbed": target.stubbed(),
        "python": platform.python_version(),
        "torch": None,
        "trigger": None,
        "fix": None,
        "extra": {},
    }
    try:
        record = expected_record(settings.data_dir, record_id)
        module = load_target(releases, target)
        result["torch"] = getattr(sys.modules.get("torch"), "__version__", None)
        if args.bundle is not None:
            return _bundle(releases, target, record_id, args.bundle)
        skip = _skip_reason(device, devices)
        if skip is None and hardware is not None:
            skip = hardware(module, device)
    except (OSError, ValueError, KeyError, *ENVIRONMENT_ERRORS) as exc:
        result.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        return _finish(result, start)
    if skip is not None:
        result.update(status="skipped", reason=skip)
        return _finish(result, start)
    result["machine"] = machine(device)
    result["cuda"] = getattr(getattr(sys.modules.get("torch"), "version", None), "cuda", None)
    result["trigger"] = _timed(lambda: _run_trigger(record, trigger, module, device))
    result["fix"] = _timed(lambda: _run_fix(fix, module, device))
    for name, extra in (extra_triggers or {}).items():
        result["extra"][name] = _timed(partial(_run_trigger, record, extra, module, device))
    checks = [{"name": "trigger", **result["trigger"]}, {"name": "fix", **result["fix"]}]
    checks += [{"name": name, **check} for name, check in result["extra"].items()]
    result["status"], result["reason"] = _overall(checks)
    return _finish(result, start)


def _bundle(releases: release_cache.Upstream, target: Target, record_id: str, into: Path) -> int:
    """`--bundle`: copy the upstream files this process loaded into a bundle's cache and say
    which distributions it imported (app.reproducers.bundle turns them into wheels)."""
    from app.reproducers.environments import imported_distributions

    files = releases.copy_loaded_files(target.package, target.version, into)
    environment = releases.environment_dir(target.package, target.version)
    report = {
        "id": record_id,
        "bundle": str(into),
        "files": len(files),
        "release": f"{target.package}=={target.version}",
        "distributions": imported_distributions(environment),
    }
    print(json.dumps(report), flush=True)
    return 0


def on_installed(target: Target) -> Target:
    """The target moved to the installed release of a project run as installed (torch): a
    GPU machine's torch is what it is, so its run names the release it ran on, and keeps
    the one the reproducer was written for as `pinned`."""
    project = upstreams.BY_PACKAGE.get(target.package)
    found = distribution_metadata.installed_version(target.package)
    if project is None or not project.installed or found is None or found == target.version:
        return target
    return replace(target, version=found, pinned=target.version)


def _finish(result: dict[str, Any], start: float) -> int:
    result["seconds"] = round(time.perf_counter() - start, 3)
    sys.stdout.flush()
    print(json.dumps(result), flush=True)
    return EXIT_CODES[result["status"]]


TraceFunction = Callable[[FrameType, str, Any], Any]


def bare(cls: Any, **attributes: Any) -> Any:
    """An instance of `cls` made without its __init__, with only these attributes set: a
    generated reproducer's object whose attributes the guard reads (the rest are the class's
    own defaults, or missing)."""
    if not isinstance(cls, type):  # a type alias (`Union[...]`) read as a class: a stand-in
        return types.SimpleNamespace(**attributes)
    obj = _uninitialised(cls)
    for name, value in attributes.items():
        set_state(obj, name, value)
    return obj


def _uninitialised(cls: Any) -> Any:
    """An instance made without __init__; of an abstract class, an instance of a subclass
    that leaves its abstract methods out (they are not what the guard reads)."""
    if getattr(cls, "__abstractmethods__", None):
        concrete = type(cls.__name__, (cls,), {})
        setattr(concrete, "__abstractmethods__", frozenset())  # noqa: B010 (not a plain attribute)
        cls = concrete
    return cls.__new__(cls)


def constructed(cls: Any, /, **initial: Any) -> Any:
    """The object a generated reproducer calls a method on: from the class's constructor
    with no arguments where it takes none (its other attributes as the class sets them; a
    method often reads several before its guard), else made without its __init__ with the
    attributes `initial` names (those __init__ sets to literal values)."""
    try:
        return cls()
    except ENVIRONMENT_ERRORS:
        raise
    except Exception:
        obj = _uninitialised(cls)
    for name, value in initial.items():
        with contextlib.suppress(AttributeError, TypeError):  # a property, a slot: left out
            set_state(obj, name, value)
    return obj


def set_state(obj: Any, name: str, value: Any) -> None:
    """Set an attribute as the object's own code would not: past a frozen dataclass's or a
    pydantic model's __setattr__ (object's), or, for a class whose instances object's refuses
    (a msgspec Struct), through its own."""
    try:
        object.__setattr__(obj, name, value)
    except TypeError:
        setattr(obj, name, value)


class SiteNotReached(AssertionError):
    """A generated trigger raised, but not from the record's raise statement."""


@dataclass(frozen=True)
class GuardedSite:
    """Where a generated reproducer's raise is: the function, the raise statement's line and
    the lines of the `if` test that guards it, in the target module's file."""

    function: str
    raise_line: int
    guard_lines: tuple[int, int]
    assertion: bool = False  # an `assert`: its own line is the guard

    def raised_here(self, exc: BaseException, filename: str | None) -> bool:
        """Whether `exc` was raised by this site's statement (its traceback's frame of the
        function is at the statement's line)."""
        frame_line = None
        tb = exc.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_name == self.function and code.co_filename == filename:
                frame_line = tb.tb_lineno
            tb = tb.tb_next
        return frame_line == self.raise_line


class _PastTheRaise(BaseException):
    """Stops a fix's call once its function runs a line past the guarded raise, which did not
    run: the fix has held, and what the function does next (a hang on an object made without
    __init__, a crash) is not the fix's to answer for."""


@contextmanager
def _lines_run(
    site: GuardedSite, module: ModuleType, stop_past: bool = False
) -> Iterator[set[int]]:
    """The lines of `site.function` (in the target module's file) that run inside the block;
    with `stop_past`, the call stops (`_PastTheRaise`) at the first line after the guard and
    the raise once the guard has run and the raise has not."""
    filename = module.__file__
    lines: set[int] = set()
    first, last = site.guard_lines
    past = max(site.raise_line, last)

    def local(frame: FrameType, event: str, _arg: Any) -> TraceFunction:
        if event == "line":
            if (
                stop_past
                and frame.f_lineno > past
                and (site.assertion or site.raise_line not in lines)
                and any(first <= line <= last for line in lines)
            ):
                raise _PastTheRaise
            lines.add(frame.f_lineno)
        return local

    def on_call(frame: FrameType, _event: str, _arg: Any) -> TraceFunction | None:
        code = frame.f_code
        return local if code.co_name == site.function and code.co_filename == filename else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        yield lines
    finally:
        sys.settrace(previous)


def trigger_scenario(site: GuardedSite, scenario: Trigger) -> Trigger:
    """A generated trigger: its error counts only when the record's own statement raised it."""

    def run(module: ModuleType, device: str) -> object:
        try:
            return scenario(module, device)
        except Exception as exc:
            if site.raised_here(exc, module.__file__) or isinstance(exc, ENVIRONMENT_ERRORS):
                raise
            raise SiteNotReached(
                f"the statement at line {site.raise_line} did not raise; the call raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    return run


def fix_scenario(site: GuardedSite, scenario: Trigger, call: str) -> Fix:
    """A generated fix: the guard ran, was false, and the raise statement never ran.

    The call stops at the first line past the raise: the fix has held there, and what the
    function does next with made-up values (a loop on an object made without __init__) is
    not the fix's. An error raised before that is reported in the state, not hidden."""

    def run(module: ModuleType, device: str) -> dict[str, Any]:
        raised, here = None, False
        with _lines_run(site, module, stop_past=True) as lines:
            try:
                scenario(module, device)
            except _PastTheRaise:
                pass
            except ENVIRONMENT_ERRORS:
                raise
            except Exception as exc:
                raised = f"{type(exc).__name__}: {exc}"
                here = site.raised_here(exc, module.__file__)
        first, last = site.guard_lines
        require(
            any(first <= line <= last for line in lines),
            f"the guard (line {first}) never ran; the call raised {raised or 'nothing'}",
        )
        require(not here, f"the statement at line {site.raise_line} still raised: {raised}")
        require(
            site.assertion or site.raise_line not in lines,
            f"the raise at line {site.raise_line} still ran",
        )
        return {"call": call, "guardRan": True, "raiseRan": False, "raisedAfterGuard": raised}

    return run


def load_target(releases: release_cache.Upstream, target: Target) -> ModuleType:
    """The target module from the release (`Upstream.load_module`: torch as installed, at
    the version it pins; others unpacked), with its cached environment of pure-Python
    requirements after everything else on the path when one was made
    (`Upstream.ensure_environment`; made here first when the target asks for it)."""
    if target.requirements:
        releases.ensure_environment(target.package, target.version, [target.module])
    environment = releases.environment_dir(target.package, target.version)
    if environment.is_dir() and str(environment) not in sys.path:
        sys.path.append(str(environment))
    return releases.load_module(
        target.package,
        target.version,
        target.module,
        target.stubs,
        package_inits=target.package_inits,
    )
