"""Runs made elsewhere, kept and shown: the run file format, its import, and a run in words.

A reproducer proves its record only where it ran, so a run says what it ran on: the machine
(a GPU's name, memory, driver and compute capability, or the CPU), Python, torch and CUDA,
and the commit of the code that ran. `errkb verify --out FILE` writes one JSON line per run
(`run_line`); a GPU machine's results come back as such a file, and `errkb runs import FILE`
(or `errkb serve`, for the files shipped in data/runs/) keeps each run beside its record,
once: a run is known by its record, its start and its machine (`run_key`), so a file
imported again adds nothing. A run of a record the store does not hold (a draft of a
release not harvested yet) is left for a later import, and counted as such.

A stored run says itself in the one sentence every surface shows (`ReproducerRun.summary`):
"Reproduced on NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0, Python 3.12.3) on 2026-12-04".
"""

import gzip
import hashlib
import json
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select
from sqlmodel import Session, col

from app.records import service as records
from app.records.files import LINES_SUFFIXES, load_documents, record_files
from app.records.model import ID_PATTERN
from app.reproducers.runner import RunOutcome
from app.store.tables import GeneratedReproducer, Record, ReproducerRun

CHANGED = "+changes"  # a commit's suffix when the code that ran had changes not committed
RAN_CODE = ("app", "reproducers", "data")  # what a reproducer's run depends on


class Machine(BaseModel):
    """What a run ran on, as the reproducer saw it (`app.reproducers.harness.machine`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    kind: Literal["gpu", "cpu"]
    name: str = Field(min_length=1, max_length=200)
    memory_mib: int | None = Field(default=None, alias="memoryMiB", ge=0)
    driver: str | None = Field(default=None, max_length=100)
    compute_capability: str | None = Field(default=None, alias="computeCapability", max_length=20)
    cores: int | None = Field(default=None, ge=1)
    platform: str | None = Field(default=None, max_length=100)


class GeneratedScript(BaseModel):
    """The generated script a run ran (a draft's reproducer is generated, not in
    reproducers/): kept with the run, so a store that never generated it shows it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    package: str = Field(max_length=200)
    version: str = Field(max_length=100)
    module: str = Field(max_length=500)
    trigger_call: str = Field(alias="triggerCall", max_length=20_000)
    fix_call: str = Field(alias="fixCall", max_length=20_000)
    direct_state: bool = Field(alias="directState")
    script: str = Field(max_length=200_000)


class RunLine(BaseModel):
    """One line of a run file: a run of one record's reproducer, with its provenance."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    record_id: str = Field(alias="id", pattern=ID_PATTERN)
    status: Literal["passed", "failed", "error", "skipped"]
    device: Literal["cpu", "cuda"]
    reason: str = Field(max_length=100_000)
    duration_s: float = Field(alias="durationS", ge=0)
    started_at: datetime = Field(alias="startedAt")
    machine: Machine | None = None
    python: str | None = Field(default=None, max_length=100)
    torch: str | None = Field(default=None, max_length=100)
    cuda: str | None = Field(default=None, max_length=100)
    commit: str | None = Field(default=None, max_length=64)
    result: dict[str, Any] | None = None
    generated: GeneratedScript | None = None


def machine_words(machine: Mapping[str, Any] | None) -> str | None:
    """A machine in words, its name first: "NVIDIA H200, 143,771 MiB, driver 580.159.04,
    compute capability 9.0", or "CPU: AMD EPYC 9654 (x86_64, 2 cores)"."""
    if not machine:
        return None
    if machine.get("kind") == "gpu":
        parts = [str(machine["name"])]
        if machine.get("memoryMiB") is not None:
            parts.append(f"{machine['memoryMiB']:,} MiB")
        if machine.get("driver"):
            parts.append(f"driver {machine['driver']}")
        if machine.get("computeCapability"):
            parts.append(f"compute capability {machine['computeCapability']}")
        return ", ".join(parts)
    about = [str(machine["platform"])] if machine.get("platform") else []
    if machine.get("cores"):
        about.append(f"{machine['cores']} cores")
    return f"CPU: {machine['name']}" + (f" ({', '.join(about)})" if about else "")


def run_line(
    outcome: RunOutcome, commit: str | None, script: GeneratedReproducer | None = None
) -> dict[str, Any]:
    """A run as one line of a run file: what `errkb verify --out` writes; a generated
    script's run carries the script."""
    result = outcome.result or {}
    generated = (
        GeneratedScript.model_validate(script, from_attributes=True).model_dump(by_alias=True)
        if script is not None
        else None
    )
    return {
        "id": outcome.record_id,
        "status": outcome.status,
        "device": outcome.device,
        "reason": outcome.reason,
        "durationS": outcome.duration_s,
        "startedAt": outcome.started_at.isoformat(),
        "machine": result.get("machine"),
        "python": result.get("python"),
        "torch": result.get("torch"),
        "cuda": result.get("cuda"),
        "commit": commit,
        "result": outcome.result,
        **({"generated": generated} if generated else {}),
    }


def _utc(moment: datetime) -> datetime:
    """A run's start in UTC; a time without a zone is read as UTC."""
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def run_key(line: RunLine) -> str:
    """A run's identity: its record, its start and what it ran on."""
    machine = line.machine.model_dump_json(by_alias=True) if line.machine else ""
    text = "\0".join(
        (line.record_id, _utc(line.started_at).isoformat(), line.device, machine, line.torch or "")
    )
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(slots=True)
class RunImport:
    """What an import did: runs added, runs already there, runs whose record the store does
    not hold (by record id), and the lines refused, each with its file and line."""

    added: int = 0
    known: int = 0
    without_record: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    other_script: int = 0  # a generated run whose record the store has another script for


def read_runs(paths: Iterable[Path]) -> tuple[list[tuple[str, RunLine]], list[str]]:
    """Every run in these files (folders read for *.jsonl), each with where it was read,
    and the lines that are not runs, each with its file, line and reason."""
    found: list[tuple[str, RunLine]] = []
    refused: list[str] = []
    for path in record_files(paths):
        if not path.name.endswith(LINES_SUFFIXES):
            continue
        for loaded in load_documents(path):
            if loaded.error is not None:
                refused.append(f"{loaded.where}: {loaded.error}")
                continue
            try:
                found.append((str(path), RunLine.model_validate(loaded.record)))
            except ValidationError as error:
                first = error.errors()[0]
                place = ".".join(str(part) for part in first["loc"]) or "the line"
                refused.append(f"{loaded.where}: {place}: {first['msg']}")
    return found, refused


def import_runs(
    session: Session, paths: Iterable[Path], origin_root: Path | None = None
) -> RunImport:
    """Keep the runs of these files beside their records, in the caller's unit of work.

    All or nothing: a file with a line that is not a run refuses the import (the report
    names each such line), so a half-read file never leaves half its runs. `origin_root`
    shortens the origin kept with each run (runs/... rather than an absolute path)."""
    lines, refused = read_runs(paths)
    report = RunImport(refused=refused)
    if refused:
        return report
    keys = [run_key(line) for _, line in lines]
    known = set(
        session.execute(
            select(col(ReproducerRun.run_key)).where(col(ReproducerRun.run_key).in_(keys))
        ).scalars()
    )
    ids = {line.record_id for _, line in lines}
    held = set(session.execute(select(col(Record.id)).where(col(Record.id).in_(ids))).scalars())
    scripts = {
        row.record_id: row.script
        for row in session.execute(
            select(GeneratedReproducer).where(col(GeneratedReproducer.record_id).in_(ids))
        ).scalars()
    }
    for (where, line), key in zip(lines, keys, strict=True):
        if key in known:
            report.known += 1
            continue
        if line.record_id not in held:
            report.without_record.append(line.record_id)
            continue
        if line.generated is not None:
            stored = scripts.setdefault(line.record_id, line.generated.script)
            if stored != line.generated.script:
                report.other_script += 1
                continue
            if session.get(GeneratedReproducer, line.record_id) is None:
                session.add(_generated_row(line.record_id, line.generated, line.started_at))
        known.add(key)
        session.add(_stored_run(line, key, _origin(where, origin_root)))
        report.added += 1
    if report.added:
        records.bump_reproducers_version(session)
    return report


def _generated_row(
    record_id: str, generated: GeneratedScript, started_at: datetime
) -> GeneratedReproducer:
    return GeneratedReproducer(
        record_id=record_id, generated_at=_utc(started_at), **generated.model_dump()
    )


def _origin(where: str, root: Path | None) -> str:
    path = Path(where).resolve()
    if root is not None and path.is_relative_to(root.resolve()):
        return str(path.relative_to(root.resolve()))
    return path.name


def _stored_run(line: RunLine, key: str, origin: str) -> ReproducerRun:
    result = line.result or {}
    target = result.get("target") or {}
    machine = line.machine.model_dump(by_alias=True, exclude_none=True) if line.machine else None
    return ReproducerRun(
        record_id=line.record_id,
        package=target.get("package"),
        version=target.get("version"),
        device=line.device,
        python=line.python,
        torch=line.torch,
        status=line.status,
        trigger_status=(result.get("trigger") or {}).get("status"),
        fix_status=(result.get("fix") or {}).get("status"),
        reason=line.reason,
        duration_s=line.duration_s,
        output_tail="",
        result=json.dumps(line.result) if line.result is not None else None,
        started_at=_utc(line.started_at),
        machine=machine_words(machine),
        cuda=line.cuda,
        origin=origin,
        run_key=key,
    )


def holds_on(runs: Iterable[ReproducerRun]) -> list[str]:
    """The torch releases (and where) these runs passed on, newest run first, each once:
    "torch 2.11.0+cu130 on NVIDIA H200", "torch 2.13.0+cpu on CPU"."""
    found: list[str] = []
    for run in runs:
        said = f"torch {run.torch} on {run.where}"
        if run.status == "passed" and run.torch and said not in found:
            found.append(said)
    return found


def checkout_commit(root: Path) -> str | None:
    """The commit of the checkout the reproducers run from, with "+changes" when what runs
    (app/, reproducers/, data/) differs from it; None outside a git checkout (a bundle
    records the commit it was made at)."""

    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(
                ["git", "-C", str(root), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None

    head = git("rev-parse", "HEAD")
    commit = head.stdout.strip() if head is not None and head.returncode == 0 else ""
    if len(commit) != 40:
        return None
    changed = git("status", "--porcelain", "--", *RAN_CODE)
    return commit + (CHANGED if changed is None or changed.stdout.strip() else "")


def write_runs(
    path: Path,
    outcomes: Iterable[RunOutcome],
    commit: str | None,
    scripts: Mapping[str, GeneratedReproducer] | None = None,
) -> int:
    """Write these runs to a run file, one line each, a generated script's run with its
    script (`scripts`, by record id); how many were written."""
    lines = [
        json.dumps(run_line(outcome, commit, (scripts or {}).get(outcome.record_id)))
        for outcome in outcomes
    ]
    _write_lines(path, lines)
    return len(lines)


def keep_passed(source: Path, dest: Path) -> int:
    """The runs of a run file that passed, without their tracebacks (the run's message and
    checks stay), into a file to ship: data/runs/ keeps proof, not output. A `.gz` dest is
    compressed. How many were kept; ValueError naming the lines that are not runs."""
    lines, refused = read_runs([source])
    if refused:
        raise ValueError("; ".join(refused[:5]))
    kept = [
        json.dumps(_without_tracebacks(line.model_dump(mode="json", by_alias=True)))
        for _, line in lines
        if line.status == "passed"
    ]
    _write_lines(dest, kept)
    return len(kept)


def _without_tracebacks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_tracebacks(v) for k, v in value.items() if k != "traceback"}
    if isinstance(value, list):
        return [_without_tracebacks(item) for item in value]
    return value


def _write_lines(path: Path, lines: list[str]) -> None:
    text = "".join(f"{line}\n" for line in lines).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text, mtime=0) if path.name.endswith(".gz") else text)
