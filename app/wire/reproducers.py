"""A record's reproducer on the wire: GET /api/errors/{id}/reproducer, and the runs, drift
check and generated calls that GET /api/errors/{id} shows beside the record."""

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator

from app.config import PROJECT_ROOT
from app.wire.base import ApiModel


def project_path(script: Any) -> Any:
    """A curated script as the wire shows it: its path in the project (a generated script,
    text, is shown as it is)."""
    if isinstance(script, Path):
        return str(
            script.relative_to(PROJECT_ROOT) if script.is_relative_to(PROJECT_ROOT) else script
        )
    return script


class ReproducerRunOut(ApiModel):
    """One stored run of a reproducer."""

    status: str
    device: str
    package: str | None
    version: str | None
    python: str | None
    torch: str | None
    trigger_status: str | None
    fix_status: str | None
    reason: str
    duration_s: float
    started_at: datetime
    output_tail: str
    machine: str | None = None  # "NVIDIA H200, 143,771 MiB, driver 580.159.04, ..."
    cuda: str | None = None
    origin: str | None = None  # the run file it was imported from (runs/...)
    summary: str = ""  # "Reproduced on NVIDIA H200 (torch 2.11.0+cu130, ...) on 2026-12-04"


class DriftOut(ApiModel):
    """Where the record's raise site stands in its target release."""

    package: str
    version: str
    status: str
    found_line: int | None
    detail: str
    checked_at: datetime


class GeneratedOut(ApiModel):
    """A reproducer generated from the raise site: the call that raises the record's error,
    the call that does not, and whether it sets state directly instead of constructing."""

    trigger_call: str
    fix_call: str
    direct_state: bool
    package: str
    version: str
    generated_at: datetime


class ReproducerOut(ApiModel):
    """GET /api/errors/{id}/reproducer: the script, its target and devices, recent runs.

    `script` is the curated script's path in the project, or, when `generated` is true, the
    generated script's text (it is stored with the record); `calls` shows what it runs."""

    record_id: str
    script: Annotated[str, BeforeValidator(project_path)]
    generated: bool = False
    calls: GeneratedOut | None = None
    target: dict[str, Any]
    devices: list[str]
    runs: list[ReproducerRunOut]
    drift: DriftOut | None
