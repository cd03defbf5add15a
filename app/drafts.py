"""Harvested drafts in the store: resolve a release, harvest it, merge the drafts (issue 6).

Drafts and curated records live in one table. The draft/reviewed state is kept beside the
record (`review_state`), never inside it, so curated records stay equal to their files.
Re-harvesting updates drafts in place, only moves a reviewed record's location (line and
source), and marks drafts whose raise site disappeared as gone in the new release.
"""

import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlmodel import Session

from app import harvest, records, upstream
from app.models import DatasetState, Record
from app.records import DRAFT, REVIEWED, SQL_CHUNK
from app.validation import record_errors

# Where a package's folder sits inside its repository, when not at the top.
REPO_PATH_PREFIX = {"sgl-project/sglang": "python/"}
LOCATION_FIELDS = (
    "filePath",
    "lineNumber",
    "sourceCode",
    "sourceCodeStart",
    "sourceCodeEnd",
    "githubUrl",
)
HARVESTED_PREFIX = "harvested:"
ORIGIN_PREFIX = "harvest:"


class ReleaseError(ValueError):
    """A release spec that cannot be resolved; the message says why."""


@dataclass(frozen=True, slots=True)
class Release:
    """A source tree to harvest and how its files map to the upstream repository."""

    spec: str
    root: Path
    package_dir: str | None
    repo: str
    ref: str
    path_prefix: str

    @property
    def scope(self) -> str:
        """The filePath prefix every draft of this release has; gone-marking stays inside."""
        return self.path_prefix + (f"{self.package_dir}/" if self.package_dir else "")


def _package_dir(name: str) -> str:
    return name.replace("-", "_")


def resolve_release(spec: str, *, repo: str | None = None, ref: str | None = None) -> Release:
    """`name==version` (downloaded), an installed distribution, or a source folder."""
    folder = Path(spec)
    if folder.is_dir():
        if not repo or not ref:
            raise ReleaseError(f"{spec}: a source folder needs --repo owner/name and --ref")
        return Release(spec, folder.resolve(), None, repo, ref, "")
    name, _, version = spec.partition("==")
    if version:
        try:
            root = upstream.ensure_unpacked(name, version)
            found = repo or upstream.github_repo(name, version)
        except upstream.UpstreamError as error:
            raise ReleaseError(f"{spec}: {error}") from error
        tag = ref or f"v{version}"
    else:
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as error:
            raise ReleaseError(f"{spec}: not installed; use NAME==VERSION to download") from error
        root = Path(distribution.locate_file(""))
        found = repo or upstream.github_repo_of(upstream.metadata_urls(distribution))
        tag = ref or f"v{distribution.version.split('+')[0]}"
    if not found:
        raise ReleaseError(f"{spec}: no GitHub repository in its metadata; pass --repo")
    return Release(spec, root, _package_dir(name), found, tag, REPO_PATH_PREFIX.get(found, ""))


@dataclass(slots=True)
class DraftCounts:
    """What storing one harvest did."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    relocated_reviewed: int = 0
    gone: int = 0
    invalid: int = 0


def _relocated(curated: dict[str, Any], draft: dict[str, Any]) -> dict[str, Any]:
    """A reviewed record with only its location taken from the new draft."""
    return curated | {key: draft[key] for key in LOCATION_FIELDS}


def store_drafts(
    session: Session, release: Release, drafts: Sequence[harvest.Draft]
) -> DraftCounts:
    """Merge one harvest into the store and commit; curated prose is never overwritten."""
    counts = DraftCounts()
    valid = []
    for draft in drafts:
        if record_errors(draft.record):
            counts.invalid += 1
        else:
            valid.append(draft.record)
    existing = records.get_records(session, [record["id"] for record in valid])
    reviewed = [
        _relocated(existing[r["id"]].record(), r)
        for r in valid
        if r["id"] in existing and existing[r["id"]].review_state == REVIEWED
    ]
    reviewed_ids = {record["id"] for record in reviewed}
    fresh = [record for record in valid if record["id"] not in reviewed_ids]
    origin = ORIGIN_PREFIX + release.spec
    written = records.write_records(session, fresh, origin=origin, review_state=DRAFT)
    counts.created, counts.updated, counts.unchanged = (
        written.created,
        written.updated,
        written.unchanged,
    )
    counts.relocated_reviewed = records.write_records(session, reviewed).updated
    fresh_ids = [record["id"] for record in fresh]
    for start in range(0, len(fresh_ids), SQL_CHUNK):
        chunk = fresh_ids[start : start + SQL_CHUNK]
        session.execute(
            update(Record).where(Record.id.in_(chunk)).values(origin=origin, gone_in=None)
        )
    counts.gone = _mark_gone(session, release, {record["id"] for record in valid})
    session.merge(DatasetState(key=HARVESTED_PREFIX + release.spec, value=_now()))
    records.bump_dataset_version(session)
    session.commit()
    return counts


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _mark_gone(session: Session, release: Release, harvested: set[str]) -> int:
    """Mark this release's earlier drafts whose raise site is no longer there."""
    statement = select(Record.id).where(
        Record.repo == release.repo,
        Record.review_state == DRAFT,
        Record.origin.startswith(ORIGIN_PREFIX),
        Record.gone_in.is_(None),
        Record.file_path.startswith(release.scope),
    )
    gone = [
        record_id
        for record_id in session.execute(statement).scalars()
        if record_id not in harvested
    ]
    for start in range(0, len(gone), SQL_CHUNK):
        chunk = gone[start : start + SQL_CHUNK]
        session.execute(update(Record).where(Record.id.in_(chunk)).values(gone_in=release.spec))
    return len(gone)


def is_harvested(session: Session, spec: str) -> bool:
    """Whether this release spec was harvested into the store already."""
    return session.get(DatasetState, HARVESTED_PREFIX + spec) is not None


def harvest_release(
    session: Session, release: Release, progress: harvest.ProgressCallback | None = None
) -> tuple[harvest.HarvestResult, DraftCounts]:
    """Harvest one release and store its drafts."""
    result = harvest.harvest_tree(
        release.root,
        repo=release.repo,
        ref=release.ref,
        analyzed_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        path_prefix=release.path_prefix,
        package_dir=release.package_dir,
        progress=progress,
    )
    return result, store_drafts(session, release, result.drafts)
