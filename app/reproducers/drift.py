"""Drift: where a record's raise site stands in the upstream release its reproducer targets.

The record's raise statement (its fingerprint, from the record's source excerpt) is looked
for in the release's file: `same` line, `moved`, `changed` (the code around it, or the raise
itself, was rewritten) or `gone`. The release comes from the upstream cache of the
settings handed down (`settings.cache_dir`).
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import select
from sqlmodel import Session, col

from app.config import Settings
from app.records import service as records
from app.records.model import ErrorRecord
from app.records.service import StoredRecord
from app.reproducers.runner import reproducer_info
from app.store.tables import DriftCheck
from app.upstreams.release_cache import Upstream

EXCERPT_LITERAL_MIN = 12


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


def _excerpt(record: ErrorRecord) -> tuple[list[str], int, int]:
    """The record's source excerpt as lines, its raise line, and the excerpt's first line."""
    code, line_number, start = record.source_code, record.line_number, record.source_code_start
    if code is None or line_number is None or start is None:
        raise ValueError(f"record {record.id} has no source excerpt to locate its raise in")
    return code.split("\n"), line_number, start


def _raise_block(record: ErrorRecord) -> list[str]:
    """The raise statement's lines from the record's excerpt, stripped (its fingerprint)."""
    lines, line_number, start = _excerpt(record)
    index = line_number - start
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


def locate_raise_site(record: ErrorRecord, text: str) -> tuple[str, int | None, str]:
    """(status, found line, detail) of a record's raise site in a newer file's text."""
    lines = text.split("\n")
    excerpt, line_number, start = _excerpt(record)
    found = _find_block(lines, _raise_block(record), line_number)
    if found is not None:
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
    literal = _longest_literal(record.error_message)
    if len(literal) >= EXCERPT_LITERAL_MIN:
        for number, line in enumerate(lines, start=1):
            if literal[:EXCERPT_LITERAL_MIN] in line:
                return "changed", number, f"message text found at line {number}, raise rewritten"
    return "gone", None, "the raise and its message text are no longer in the file"


def check_drift(settings: Settings, stored: StoredRecord) -> DriftOutcome | None:
    """Locate a record's raise site in its reproducer's target release; None without one."""
    info = reproducer_info(settings, stored.id)
    record = stored.record
    if info is None or record.file_path is None or record.source_code is None:
        return None
    if record.line_number is None or record.source_code_start is None:
        return None
    package, version = info.target["package"], info.target["version"]
    root = Upstream(settings.cache_dir).release_root(package, version)
    path = _release_file(root, record.file_path)
    if path is None:
        return DriftOutcome(stored.id, package, version, "gone", None, "file not in the release")
    status, line, detail = locate_raise_site(record, path.read_text(encoding="utf-8"))
    return DriftOutcome(stored.id, package, version, status, line, detail)


def store_drift(session: Session, outcome: DriftOutcome) -> DriftCheck:
    """Keep a drift check beside its record, in the caller's unit of work."""
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
    records.bump_reproducers_version(session)
    return check


def latest_drift(session: Session, record_id: str) -> DriftCheck | None:
    """The newest drift check of a record."""
    statement = (
        select(DriftCheck)
        .where(col(DriftCheck.record_id) == record_id)
        .order_by(col(DriftCheck.checked_at).desc(), col(DriftCheck.id).desc())
        .limit(1)
    )
    return session.execute(statement).scalars().first()
