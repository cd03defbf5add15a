"""Run the reproducers in subprocesses and store each run beside its record.

A reproducer may crash, hang or leak shared memory, so each one runs in its own process
group with a timeout, and the /dev/shm segments it left behind are removed. Every run is
stored beside its record; `errkb verify` exits non-zero when a reproducer that could run
failed. The scripts are found and read here too (`reproducer_info`), without running them.
"""

import ast
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlmodel import Session, col

from app.config import Settings
from app.records import service as records
from app.records.model import ID_PATTERN
from app.store.engine import unit_of_work
from app.store.tables import ReproducerRun

OUTPUT_TAIL_CHARS = 4000
RECENT_RUNS = 10
SHM_DIR = Path("/dev/shm")
FAILING_STATUSES = frozenset({"failed", "error"})


@dataclass(frozen=True, slots=True)
class ReproducerInfo:
    """What a reproducer script declares: its record, upstream target and devices."""

    record_id: str
    script: Path
    target: dict[str, Any]
    devices: tuple[str, ...]


def _declared(script: Path) -> ReproducerInfo:
    """Read TARGET and DEVICES from the script's source without running it."""
    tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    target: dict[str, Any] = {}
    devices: tuple[str, ...] = ()
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
            continue
        name = node.targets[0].id
        if name == "TARGET" and isinstance(node.value, ast.Call):
            for keyword in node.value.keywords:
                if keyword.arg in ("package", "version", "module", "classes"):
                    target[keyword.arg] = ast.literal_eval(keyword.value)
        elif name == "DEVICES":
            devices = tuple(ast.literal_eval(node.value))
    if "classes" in target:
        target["classes"] = list(target["classes"])
    return ReproducerInfo(script.stem, script, target, devices)


def reproducer_info(settings: Settings, record_id: str) -> ReproducerInfo | None:
    """The reproducer of a record, or None when it has none."""
    script = settings.reproducers_dir / f"{record_id}.py"
    if not re.fullmatch(ID_PATTERN, record_id) or not script.is_file():
        return None
    return _declared(script)


def all_reproducers(settings: Settings) -> list[ReproducerInfo]:
    """Every reproducer script, in id order."""
    scripts = sorted(settings.reproducers_dir.glob("*.py"))
    return [_declared(s) for s in scripts if re.fullmatch(ID_PATTERN, s.stem)]


@dataclass(slots=True)
class RunOutcome:
    """One finished run: the script's result protocol, or why there is none."""

    record_id: str
    device: str
    status: str
    reason: str
    duration_s: float
    output_tail: str
    result: dict[str, Any] | None
    started_at: datetime

    def check_status(self, check: str) -> str | None:
        """Status of the "trigger" or "fix" check, when it ran."""
        return ((self.result or {}).get(check) or {}).get("status")


def _shm_entries() -> set[str]:
    return set(os.listdir(SHM_DIR)) if SHM_DIR.is_dir() else set()


def _remove_leaked_shm(before: set[str]) -> list[str]:
    """Remove /dev/shm entries that appeared during the run and belong to this user."""
    removed = []
    for name in sorted(_shm_entries() - before):
        path = SHM_DIR / name
        try:
            if path.stat().st_uid == os.getuid():
                path.unlink()
                removed.append(name)
        except OSError:
            continue
    return removed


def last_json_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) and "status" in value else None
    return None


def scratch_environment(scratch: Path) -> dict[str, str]:
    """Where a run's temporary files and torch's and Triton's caches go: folders of its
    scratch folder, made here. Upstream code keeps state there between processes (torch's
    compiler bisector writes the backend it is given to a status file that every later
    `import torch` on the machine reads): a script's call must not leave it to the next."""
    folders = {  # dotted names: the script's folder is on its sys.path, and a folder named
        # `triton` there is imported as an empty triton package
        "TMPDIR": ".tmp",
        "TORCHINDUCTOR_CACHE_DIR": ".torchinductor",
        "TRITON_CACHE_DIR": ".triton",
    }
    environment = {name: str(scratch / folder) for name, folder in folders.items()}
    for folder in environment.values():
        Path(folder).mkdir(parents=True, exist_ok=True)
    return environment


def run_reproducer(
    settings: Settings,
    info: ReproducerInfo,
    device: str,
    data_dir: Path | None = None,
    timeout_s: float | None = None,
    environment: dict[str, str] | None = None,
    torch: str = "pinned",
) -> RunOutcome:
    """Run one reproducer script in its own process group, bounded by the timeout, in a
    scratch folder of its own: what upstream code writes or removes relative to where it
    runs (a path left empty is that folder) never touches the caller's.

    A generated script reads its record from `data_dir` (the record is a draft, not a file
    of data/), runs under a shorter `timeout_s`, and with errkb on its path (`environment`).
    `torch="installed"` runs a torch reproducer on the installed release, whichever it is."""
    started_at = datetime.now(UTC)
    before = _shm_entries()
    timeout = timeout_s if timeout_s is not None else settings.reproducer_timeout_s
    env = (environment if environment is not None else dict(os.environ)) | {
        "ERRKB_CACHE_DIR": str(settings.cache_dir.expanduser().resolve()),
        "ERRKB_DATA_DIR": str((data_dir or settings.data_dir).expanduser().resolve()),
    }
    command = [sys.executable, str(info.script.resolve()), "--device", device, "--torch", torch]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="errkb-run-") as scratch:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env | scratch_environment(Path(scratch)),
            cwd=scratch,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            timed_out = True
    duration = time.perf_counter() - start
    leaked = _remove_leaked_shm(before)
    result = None if timed_out else last_json_line(output)
    if timed_out:
        status, reason = "error", f"timed out after {timeout:g} s"
    elif result is None:
        status, reason = "error", f"exited with {process.returncode} and printed no result"
    else:
        status, reason = result["status"], result.get("reason", "")
    if leaked:
        reason += f" (removed leaked /dev/shm entries: {', '.join(leaked)})"
    return RunOutcome(
        record_id=info.record_id,
        device=(result or {}).get("device") or device,
        status=status,
        reason=reason,
        duration_s=round(duration, 3),
        output_tail=output[-OUTPUT_TAIL_CHARS:],
        result=result,
        started_at=started_at,
    )


def store_run(session: Session, outcome: RunOutcome) -> ReproducerRun:
    """Keep a run beside its record, in the caller's unit of work."""
    result = outcome.result or {}
    target = result.get("target") or {}
    run = ReproducerRun(
        record_id=outcome.record_id,
        package=target.get("package"),
        version=target.get("version"),
        device=outcome.device,
        python=result.get("python"),
        torch=result.get("torch"),
        status=outcome.status,
        trigger_status=outcome.check_status("trigger"),
        fix_status=outcome.check_status("fix"),
        reason=outcome.reason,
        duration_s=outcome.duration_s,
        output_tail=outcome.output_tail,
        result=json.dumps(outcome.result) if outcome.result is not None else None,
        started_at=outcome.started_at,
    )
    session.add(run)
    records.bump_reproducers_version(session)
    return run


def verify(
    engine: Engine,
    settings: Settings,
    record_ids: Iterable[str],
    device: str = "auto",
    torch: str = "pinned",
) -> list[RunOutcome]:
    """Run and store the reproducers of these records (all of them when none are named).

    Each run is stored in a unit of work of its own, after the run: no transaction (nor
    SQLite's write lock) is held while a reproducer runs."""
    wanted = list(record_ids)
    infos = all_reproducers(settings)
    if wanted:
        known = {info.record_id: info for info in infos}
        missing = [record_id for record_id in wanted if record_id not in known]
        if missing:
            raise ValueError(f"no reproducer for {', '.join(missing)}")
        infos = [known[record_id] for record_id in wanted]
    outcomes = []
    for info in infos:
        outcome = run_reproducer(settings, info, device, torch=torch)
        with unit_of_work(engine) as session:
            if records.get_record(session, info.record_id) is not None:
                store_run(session, outcome)
        outcomes.append(outcome)
    return outcomes


def exit_status(outcomes: Iterable[RunOutcome]) -> int:
    """1 when a reproducer that could run failed or errored; skipped runs do not count."""
    return int(any(outcome.status in FAILING_STATUSES for outcome in outcomes))


def latest_runs(session: Session, record_id: str, limit: int = RECENT_RUNS) -> list[ReproducerRun]:
    """The most recent runs of a record's reproducer, newest first."""
    statement = (
        select(ReproducerRun)
        .where(col(ReproducerRun.record_id) == record_id)
        .order_by(col(ReproducerRun.started_at).desc(), col(ReproducerRun.id).desc())
        .limit(limit)
    )
    return list(session.execute(statement).scalars())
