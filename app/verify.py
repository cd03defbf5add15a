"""Run the reproducers in subprocesses, store each run, and check raise sites for drift.

A reproducer may crash, hang or leak shared memory, so each one runs in its own process
group with a timeout, and the /dev/shm segments it left behind are removed. Every run is
stored beside its record (issue 5); `errkb verify` exits non-zero when a reproducer that
could run failed. Drift compares a record's raise site with the upstream release its
reproducer targets: same, moved, changed or gone.
"""

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlmodel import Session

from app import upstream
from app.config import Settings
from app.records import service as records
from app.store.tables import DriftCheck, ReproducerRun

OUTPUT_TAIL_CHARS = 4000
RECENT_RUNS = 10
SHM_DIR = Path("/dev/shm")
FAILING_STATUSES = frozenset({"failed", "error"})
EXCERPT_LITERAL_MIN = 12


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
    if not re.fullmatch(r"[0-9a-f]{16}", record_id) or not script.is_file():
        return None
    return _declared(script)


def all_reproducers(settings: Settings) -> list[ReproducerInfo]:
    """Every reproducer script, in id order."""
    scripts = sorted(settings.reproducers_dir.glob("*.py"))
    return [_declared(s) for s in scripts if re.fullmatch(r"[0-9a-f]{16}", s.stem)]


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


def _last_json_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) and "status" in value else None
    return None


def run_reproducer(settings: Settings, info: ReproducerInfo, device: str) -> RunOutcome:
    """Run one reproducer script in its own process group, bounded by the timeout."""
    started_at = datetime.now(UTC)
    before = _shm_entries()
    env = os.environ | {
        "ERRKB_CACHE_DIR": str(settings.cache_dir),
        "ERRKB_DATA_DIR": str(settings.data_dir),
    }
    command = [sys.executable, str(info.script), "--device", device]
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=settings.reproducer_timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        timed_out = True
    duration = time.perf_counter() - start
    leaked = _remove_leaked_shm(before)
    result = None if timed_out else _last_json_line(output)
    if timed_out:
        status, reason = "error", f"timed out after {settings.reproducer_timeout_s:g} s"
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
    """Keep a run beside its record; the caller commits."""
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
    return run


def verify(
    session: Session, settings: Settings, record_ids: Iterable[str], device: str = "auto"
) -> list[RunOutcome]:
    """Run and store the reproducers of these records (all of them when none are named)."""
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
        outcome = run_reproducer(settings, info, device)
        if records.get_record(session, info.record_id) is not None:
            store_run(session, outcome)
        session.commit()  # either way: no transaction (or write lock) held while the next runs
        outcomes.append(outcome)
    return outcomes


def exit_status(outcomes: Iterable[RunOutcome]) -> int:
    """1 when a reproducer that could run failed or errored; skipped runs do not count."""
    return int(any(outcome.status in FAILING_STATUSES for outcome in outcomes))


def latest_runs(session: Session, record_id: str, limit: int = RECENT_RUNS) -> list[ReproducerRun]:
    """The most recent runs of a record's reproducer, newest first."""
    statement = (
        select(ReproducerRun)
        .where(ReproducerRun.record_id == record_id)
        .order_by(ReproducerRun.started_at.desc(), ReproducerRun.id.desc())
        .limit(limit)
    )
    return list(session.execute(statement).scalars())


@dataclass(frozen=True, slots=True)
class DriftOutcome:
    """Where the raise site stands in the target release."""

    record_id: str
    package: str
    version: str
    status: str
    found_line: int | None
    detail: str


def _release_file(root: Path, file_path: str) -> Path | None:
    """The record's file in the unpacked release; repo paths may carry a prefix
    (SGLang's `python/sglang/...` is `sglang/...` in its wheel)."""
    parts = Path(file_path).parts
    for skip in range(len(parts)):
        candidate = root.joinpath(*parts[skip:])
        if candidate.is_file():
            return candidate
    return None


def _raise_block(record: dict[str, Any]) -> list[str]:
    """The raise statement's lines from the record's excerpt, stripped (its fingerprint)."""
    lines = record["sourceCode"].split("\n")
    index = record["lineNumber"] - record["sourceCodeStart"]
    block, depth = [], 0
    for line in lines[index:]:
        block.append(line.strip())
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if depth <= 0:
            break
    return block


def _find_block(lines: list[str], block: list[str], near: int) -> int | None:
    """1-based line where the stripped block starts, nearest to `near`."""
    stripped = [line.strip() for line in lines]
    starts = [
        i + 1
        for i in range(len(stripped) - len(block) + 1)
        if stripped[i : i + len(block)] == block
    ]
    return min(starts, key=lambda start: abs(start - near)) if starts else None


def _longest_literal(message: str) -> str:
    return max(re.split(r"\{[^{}]*\}", message), key=len).strip()


def locate_raise_site(record: dict[str, Any], text: str) -> tuple[str, int | None, str]:
    """(status, found line, detail) of a record's raise site in a newer file's text."""
    lines = text.split("\n")
    line_number, start = record["lineNumber"], record["sourceCodeStart"]
    found = _find_block(lines, _raise_block(record), line_number)
    if found is not None:
        excerpt = record["sourceCode"].split("\n")
        current = lines[
            start - 1 + found - line_number : start - 1 + found - line_number + len(excerpt)
        ]
        same_excerpt = current == excerpt
        if found == line_number:
            if same_excerpt:
                return "same", found, "line and source excerpt unchanged"
            return "changed", found, "raise at the same line, the code around it changed"
        shift = f"{found - line_number:+d}"
        detail = f"raise moved from line {line_number} to {found} ({shift})"
        return "moved", found, detail + ("" if same_excerpt else "; the code around it changed")
    literal = _longest_literal(record["errorMessage"])
    if len(literal) >= EXCERPT_LITERAL_MIN:
        for number, line in enumerate(lines, start=1):
            if literal[:EXCERPT_LITERAL_MIN] in line:
                return "changed", number, f"message text found at line {number}, raise rewritten"
    return "gone", None, "the raise and its message text are no longer in the file"


def check_drift(settings: Settings, stored: records.StoredRecord) -> DriftOutcome | None:
    """Locate a record's raise site in its reproducer's target release; None without one."""
    info = reproducer_info(settings, stored.id)
    record = stored.record()
    if info is None or record["filePath"] is None or record["sourceCode"] is None:
        return None
    package, version = info.target["package"], info.target["version"]
    root = upstream.ensure_unpacked(package, version)
    path = _release_file(root, record["filePath"])
    if path is None:
        return DriftOutcome(stored.id, package, version, "gone", None, "file not in the release")
    status, line, detail = locate_raise_site(record, path.read_text(encoding="utf-8"))
    return DriftOutcome(stored.id, package, version, status, line, detail)


def store_drift(session: Session, outcome: DriftOutcome) -> DriftCheck:
    """Keep a drift check beside its record; the caller commits."""
    check = DriftCheck(
        record_id=outcome.record_id,
        package=outcome.package,
        version=outcome.version,
        status=outcome.status,
        found_line=outcome.found_line,
        detail=outcome.detail,
        checked_at=datetime.now(UTC),
    )
    session.add(check)
    return check


def latest_drift(session: Session, record_id: str) -> DriftCheck | None:
    """The newest drift check of a record."""
    statement = (
        select(DriftCheck)
        .where(DriftCheck.record_id == record_id)
        .order_by(DriftCheck.checked_at.desc(), DriftCheck.id.desc())
        .limit(1)
    )
    return session.execute(statement).scalars().first()
