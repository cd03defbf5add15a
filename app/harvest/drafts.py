"""Harvested drafts in the store: resolve a release, harvest it, merge the drafts.

Drafts and curated records live in one table. The draft/reviewed state is kept beside the
record (`review_state`), never inside it, so curated records stay equal to their files.
Re-harvesting updates drafts in place, only moves a reviewed record's location (line and
source), and marks drafts whose raise site disappeared as gone in the new release.

An older release of a package harvested after a newer one only adds: its sites
get their locations in that release (file, line, function and link, without the source
excerpt and code context the newest release's locations keep; a site it lacks simply has
none), a message it raised that the newer release no longer has gets a draft of its own
(gone in the newer release), and the drafts the newer release wrote keep their text.
"""

import importlib.metadata
import time
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col

from app import exception_classes, harvest, store, upstreams
from app.harvest.extract import PythonTree
from app.records import locations, site_keys
from app.records import service as records
from app.records.model import ErrorRecord
from app.records.service import DRAFT
from app.records.validation import record_errors
from app.store.engine import is_lock_timeout
from app.store.tables import DatasetState, Record
from app.upstreams import distribution_metadata, nvidia_packages, release_cache, release_errors

HARVESTED_PREFIX = "harvested:"
HARVEST_BATCH = 100  # drafts per transaction: a short hold of the write lock, even under load
HARVEST_LOCK_TRIES = 10  # lock waits (each ERRKB_LOCK_TIMEOUT_S) a batch makes before failing
HARVEST_YIELD_S = 0.025
"""The pause after each of a harvest's transactions on a store whose waiting writers poll
(SQLite): a writer of another process (`errkb harvest` beside a server, or another worker)
tries for the lock at most 25 ms apart in its first 128 ms of waiting, and without a pause
finds it taken at every try while the batches follow one another (`bench/bench_store.py
--sections writes`). About 4 s over a release's 160 transactions."""
ORIGIN_PREFIX = "harvest:"
NVIDIA_MISSING = "no NVIDIA package to read the error codes of"  # with the package's key
BUILD_LIBRARIES_SKIPPED = "build libraries not read"  # with the download's reason
BUNDLED_SKIPPED = "bundled package not read"  # with its name and the reason
T = TypeVar("T")


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
    label: str  # how locations name it: `vllm==0.33.0`, or `owner/name@ref` for a folder
    native_root: Path | None = None  # where its C++/CUDA source folders are, if anywhere
    build_root: Path | None = None  # its build libraries' read-only data, if its project has any
    build_skipped: str | None = None  # why they could not be had (harvest goes on without)
    # What is kept of the NVIDIA packages it requires (their key: the CUDA runtime, NCCL),
    # for their error codes; and why one its project reports the codes of is missing.
    nvidia: dict[str, Path] = field(default_factory=dict)
    nvidia_missing: dict[str, str] = field(default_factory=dict)
    # The packages it requires whose Python is harvested with it (SGLang's kernels), and
    # why one it requires could not be had, by name.
    bundled: tuple[PythonTree, ...] = ()
    bundled_missing: dict[str, str] = field(default_factory=dict)

    @property
    def scopes(self) -> tuple[str, ...]:
        """The filePath prefixes of this release's drafts, Python (its bundled packages'
        too) and native; gone-marking stays inside them."""
        python = self.path_prefix + (f"{self.package_dir}/" if self.package_dir else "")
        project = upstreams.BY_REPO.get(self.repo)
        native = project.native_sources.values() if project and python else ()
        bundled = [f"{tree.path_prefix}{tree.package_dir}/" for tree in self.bundled]
        return (python, *bundled, *(f"{folder}/" for folder in native))


def _package_dir(name: str) -> str:
    return name.replace("-", "_")


def resolve_release(
    spec: str,
    *,
    repo: str | None = None,
    ref: str | None = None,
    releases: release_cache.Upstream | None = None,
) -> Release:
    """`name==version` (downloaded into `releases`, the upstream cache the entry point
    passes down, unless it is the installed release of a project run as installed), an
    installed distribution, or a source folder. The repository comes from the release's
    metadata, else from the known upstream it belongs to (torch's older wheels name only
    their web site). With `releases`, a project's build libraries (torch's CUDA build) are
    read from that cache too, for an installed release as for a downloaded one."""
    folder = Path(spec)
    if folder.is_dir():
        if not repo or not ref:
            raise ReleaseError(f"{spec}: a source folder needs --repo owner/name and --ref")
        root = folder.resolve()
        return Release(spec, root, None, repo, ref, "", f"{repo}@{ref}", root)
    name, _, version = spec.partition("==")
    if version and not _is_installed_release(name, version):
        if releases is None:
            raise ReleaseError(f"{spec}: downloading a release needs the upstream cache")
        try:
            root = releases.ensure_unpacked(name, version)
            found = repo or releases.github_repo(name, version) or upstreams.package_repo(name)
            project = upstreams.BY_REPO.get(found or "")
            native = project.native_sources if project else {}
            native_root = releases.ensure_native(name, version, tuple(native))
        except release_errors.UpstreamError as error:
            raise ReleaseError(f"{spec}: {error}") from error
        build_root, build_skipped = _build_libraries(releases, name, version)
        tag = ref or f"v{version}"
    else:
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as error:
            raise ReleaseError(f"{spec}: not installed; use NAME==VERSION to download") from error
        root = Path(str(distribution.locate_file("")))
        found = (
            repo
            or distribution_metadata.github_repo_of(
                distribution_metadata.metadata_urls(distribution)
            )
            or upstreams.package_repo(name)
        )
        version = distribution.version.split("+")[0]
        tag = ref or f"v{version}"
        native_root = root  # an installed wheel keeps its headers beside its Python
        build_root, build_skipped = _build_libraries(releases, name, version)
    if not found:
        raise ReleaseError(f"{spec}: no GitHub repository in its metadata; pass --repo")
    prefix = upstreams.path_prefix(found)
    label = f"{name}=={version}"
    nvidia, missing = _nvidia_packages(found, name, version, releases)
    bundled, bundled_missing = _bundled_trees(found, name, root, releases)
    return Release(
        spec,
        root,
        _package_dir(name),
        found,
        tag,
        prefix,
        label,
        native_root,
        build_root=build_root,
        build_skipped=build_skipped,
        nvidia=nvidia,
        nvidia_missing=missing,
        bundled=bundled,
        bundled_missing=bundled_missing,
    )


def _bundled_trees(
    repo: str, distribution: str, root: Path, releases: release_cache.Upstream | None
) -> tuple[tuple[PythonTree, ...], dict[str, str]]:
    """The Python of each package the release of `distribution` (unpacked or installed at
    `root`) requires at one exact version and its project harvests with it, unpacked into
    the upstream cache; and why one could not be had, by name: the harvest goes on without
    it."""
    project = upstreams.BY_REPO.get(repo)
    trees: list[PythonTree] = []
    missing: dict[str, str] = {}
    for bundled in project.bundled if project else ():
        pinned = distribution_metadata.pinned_requirement(root, distribution, bundled.distributions)
        if pinned is None:
            continue  # this release does not require it (SGLang before its kernels)
        name, version = pinned
        if releases is None:
            missing[f"{name}=={version}"] = "no upstream cache to fetch it into"
            continue
        try:
            tree_root = releases.ensure_unpacked(name, version)
        except release_errors.UpstreamError as error:
            missing[f"{name}=={version}"] = str(error)
            continue
        trees.append(PythonTree(tree_root, bundled.package, bundled.path_prefix))
    return tuple(trees), missing


def _build_libraries(
    releases: release_cache.Upstream | None, name: str, version: str
) -> tuple[Path | None, str | None]:
    """The release's build libraries' read-only data (torch's CUDA build: the messages only
    it has), downloaded into the cache once, whichever wheel the Python sources came from;
    or why there is none. A failed download costs the harvest those messages, never the
    release."""
    if releases is None:
        return None, None
    try:
        return releases.ensure_build_libraries(name, version), None
    except release_errors.UpstreamError as error:
        return None, str(error)


def _nvidia_packages(
    repo: str, name: str, version: str, releases: release_cache.Upstream | None
) -> tuple[dict[str, Path], dict[str, str]]:
    """What is kept of the NVIDIA packages whose error codes the release's project reports
    (the CUDA runtime, NCCL), fetched into the upstream cache, by key; and why any is
    missing: a harvest goes on without it."""
    kept: dict[str, Path] = {}
    missing: dict[str, str] = {}
    project = upstreams.BY_REPO.get(repo)
    if project is None:
        return kept, missing
    wanted = [
        package
        for package, reports in (
            (nvidia_packages.CUDA_RUNTIME, project.cuda_errors),
            (nvidia_packages.NCCL, project.nccl_check),
        )
        if reports is not None
    ]
    for package in wanted:
        if releases is None:
            missing[package.key] = "no upstream cache to fetch it into"
            continue
        try:
            folder = releases.ensure_nvidia(name, version, package)
        except release_errors.UpstreamError as error:
            missing[package.key] = str(error)
            continue
        if folder is not None:
            kept[package.key] = folder
    return kept, missing


def _is_installed_release(name: str, version: str) -> bool:
    """Whether `name==version` is installed here and its project is run as installed
    (torch): its files are then read where they are, not downloaded again (torch's wheel
    is half a gigabyte, the same Python files)."""
    project = next((p for p in upstreams.UPSTREAMS if p.distribution == name), None)
    return (
        project is not None
        and project.installed
        and distribution_metadata.installed_version(name) == version
    )


@dataclass(slots=True)
class DraftCounts:
    """What storing one harvest did."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    claimed: int = 0  # sites that reviewed records claim: located, not drafted
    absorbed: int = 0  # drafts stored earlier for such sites, merged into their record
    gone: int = 0
    invalid: int = 0


@dataclass
class Extracted:
    """A release's drafts, checked, with what else storing them needs: made without the
    store, so that a server makes it in another process (app.lifecycle.startup), where parsing
    and checking a release's thousands of sites does not share the GIL with its requests."""

    result: harvest.HarvestResult
    valid: list[tuple[harvest.Draft, ErrorRecord]]
    invalid: int
    exception_classes: dict[str, tuple[str, ...]]


def extract_release(
    release: Release, progress: harvest.ProgressCallback | None = None
) -> Extracted:
    """Harvest one release's source and check its drafts. The drafts keep no raise site
    (its syntax trees), which nothing after the harvest reads, so they travel between
    processes as records and their context alone."""
    result = harvest.harvest_tree(
        release.root,
        repo=release.repo,
        ref=release.ref,
        analyzed_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        path_prefix=release.path_prefix,
        package_dir=release.package_dir,
        progress=progress,
        native_root=release.native_root,
        build_root=release.build_root,
        nvidia=release.nvidia,
        bundled=release.bundled,
    )
    for spec, why in release.bundled_missing.items():
        result.skipped[f"{BUNDLED_SKIPPED}: {spec}: {why}"] += 1
    if release.build_skipped:
        result.skipped[f"{BUILD_LIBRARIES_SKIPPED}: {release.build_skipped}"] += 1
    for key in release.nvidia_missing:
        result.skipped[f"{NVIDIA_MISSING}: {key}"] += 1
    result.drafts = [replace(draft, site=None) for draft in result.drafts]
    valid: list[tuple[harvest.Draft, ErrorRecord]] = []
    for draft in result.drafts:
        if not record_errors(draft.record):
            valid.append((draft, ErrorRecord.model_validate(draft.record)))
    invalid = len(result.drafts) - len(valid)
    return Extracted(result, valid, invalid, exception_classes.exception_classes(result.bases))


def store_drafts(session: Session, release: Release, extracted: Extracted) -> DraftCounts:
    """Merge one harvest into the store; curated records are never overwritten.

    Committed in short transactions: batches of about HARVEST_BATCH drafts, then the rest (gone
    sites, the release's exception classes and mark, the dataset version). One transaction for
    a whole release would hold the write lock for many seconds, and the API's writes waiting
    behind it would run out of time (503); between two batches a waiting write gets its turn
    (app.store.engine.WriteQueue). Nothing that takes long without writing (checking the
    drafts) runs inside one. A harvest cut short leaves its release unmarked, so the next one
    harvests it again; the dataset version moves once, at the end, so the match index is
    rebuilt once per release and not per batch.

    A site that a reviewed record claims gets no draft: its location in this release is
    recorded on the record (app.records.locations), and a draft stored for it earlier is absorbed.
    """
    counts = DraftCounts(invalid=extracted.invalid)
    valid, release_classes = extracted.valid, extracted.exception_classes
    session.commit()  # whatever the caller began: nothing before here writes
    newer = _in_turn(session, lambda: newer_harvested(session, release))
    located: set[str] = set()
    fresh_ids: set[str] = set()
    for batch in _batches(valid):
        store = partial(_store_batch, session, release, batch, newer)
        batch_located, batch_fresh, batch_counts = _in_turn(session, store)
        for name in ("created", "updated", "unchanged", "claimed", "absorbed"):
            setattr(counts, name, getattr(counts, name) + getattr(batch_counts, name))
        located |= batch_located
        fresh_ids |= batch_fresh

    def finish() -> int:
        gone_drafts = 0
        found = set(located)
        if newer is None:
            gone_drafts = _mark_gone(session, release, fresh_ids)
            gone = _gone_locations(session, release, found)
            locations.put_release(session, release.label, gone)
            found |= set(gone)
        locations.drop_release_except(session, release.label, found)
        exception_classes.replace_release(session, release.label, release_classes)
        session.merge(DatasetState(key=HARVESTED_PREFIX + release.spec, value=_now()))
        records.bump_dataset_version(session)
        return gone_drafts

    counts.gone = _in_turn(session, finish)
    return counts


def _in_turn(session: Session, work: Callable[[], T]) -> T:
    """`work` in a transaction of its own, committed; tried again (up to HARVEST_LOCK_TRIES
    lock waits) when the write lock does not come: background work waits its turn longer
    than a request does, and behind a stream of writes from other processes (which meet
    SQLite's busy handler, not this process's queue) one wait running out must not end a
    harvest."""
    tries = 1
    while True:
        try:
            done = work()
            session.commit()
            if store.backend(session).waiting_writers_poll:
                time.sleep(HARVEST_YIELD_S)
            return done
        except OperationalError as error:
            session.rollback()
            if not is_lock_timeout(error) or tries == HARVEST_LOCK_TRIES:
                raise
            tries += 1


KeyedDraft = tuple[str | None, harvest.Draft, ErrorRecord]
"""A checked draft with its site key (app.records.site_keys.site_key), worked out once."""


def _batches(valid: list[tuple[harvest.Draft, ErrorRecord]]) -> Iterator[list[KeyedDraft]]:
    """The drafts in batches of about HARVEST_BATCH; the sites of one key stay in one batch,
    since a reviewed record claims the closest of them (app.records.locations.find_claims)."""
    keyed = [(site_keys.site_key(record), draft, record) for draft, record in valid]
    batch: list[KeyedDraft] = []
    for item in sorted(keyed, key=lambda item: item[0] or ""):
        key = item[0]
        if len(batch) >= HARVEST_BATCH and (key is None or key != batch[-1][0]):
            yield batch
            batch = []
        batch.append(item)
    if batch:
        yield batch


def _store_batch(
    session: Session,
    release: Release,
    valid: list[KeyedDraft],
    newer: str | None,
) -> tuple[set[str], set[str], DraftCounts]:
    """Store one batch of drafts and their locations in this release; the ids located,
    the ids written as drafts, and what it did. The batch's stored records are read once,
    for all that needs them: the older release's check, analyzedAt, the drafts to absorb."""
    counts = DraftCounts()
    stored = records.get_records(session, [record.id for _, _, record in valid])
    sites = [
        locations.Site(record.id, key, d.function, record.line_number) for key, d, record in valid
    ]
    claims = locations.find_claims(session, sites)
    unclaimed = [record for _, _, record in valid if record.id not in claims]
    if newer is not None:  # an older release: the newer one's drafts stay as they are
        kept = len(unclaimed)
        unclaimed = [record for record in unclaimed if record.id not in stored]
        counts.unchanged += kept - len(unclaimed)
    fresh = [_keep_analyzed_at(record, stored.get(record.id)) for record in unclaimed]
    origin = ORIGIN_PREFIX + release.spec
    written = records.write_drafts(session, fresh, origin=origin, gone_in=newer)
    counts.created += written.created
    counts.updated += written.updated
    counts.unchanged += written.unchanged
    counts.claimed += len(claims)
    stale = [
        draft_id
        for draft_id, owner in claims.items()
        if draft_id != owner and draft_id in stored and stored[draft_id].review_state == DRAFT
    ]
    for draft_id in stale:
        locations.absorb(session, draft_id, claims[draft_id])
    counts.absorbed += len(stale)
    fresh_ids = [record.id for record in fresh]
    located = {
        claims.get(record.id, record.id): locations.Location.of(
            record, release.label, d.function, d.context
        )
        for _, d, record in valid
    }
    if newer is not None:  # forty releases must not make the store forty times larger
        new_here = set(fresh_ids)  # sites no newer release raises: this one explains them
        located = {
            record_id: location.slim(newest=record_id in new_here)
            for record_id, location in located.items()
        }
    locations.put_release(session, release.label, located)
    return set(located), set(fresh_ids), counts


def newer_harvested(session: Session, release: Release) -> str | None:
    """The newest release of the same package harvested already, when it is newer than
    ``release``; None for the newest, and for a source folder (it names no version)."""
    name, _, version = release.label.partition("==")
    if not version:
        return None
    prefix = f"{HARVESTED_PREFIX}{name}=="
    keys = session.execute(
        select(col(DatasetState.key)).where(col(DatasetState.key).startswith(prefix))
    ).scalars()
    specs = [key.removeprefix(HARVESTED_PREFIX) for key in keys]
    newest = max(specs, key=site_keys.release_order, default=None)
    if newest is None or site_keys.release_order(newest) <= site_keys.release_order(release.label):
        return None
    return newest


def _keep_analyzed_at(draft: ErrorRecord, before: records.StoredRecord | None) -> ErrorRecord:
    """The draft, keeping the analyzedAt already stored when nothing else changed:
    harvesting the same release again then changes nothing, not even the dataset version."""
    if before is None:
        return draft
    old = before.record
    if old.model_copy(update={"analyzed_at": draft.analyzed_at}) != draft:
        return draft
    return draft.model_copy(update={"analyzed_at": old.analyzed_at})


def _gone_locations(
    session: Session, release: Release, located: Set[str]
) -> dict[str, locations.Location]:
    """A gone location for every record of this release's files that it no longer raises.

    The records are locked against deletion until the harvest commits (PostgreSQL's FOR KEY
    SHARE; SQLite's writer holds the whole store already): an API write deleting one of
    them between this read and the insert of its location failed the harvest on the
    locations' foreign key."""
    statement = (
        select(col(Record.id), col(Record.file_path))
        .where(col(Record.repo) == release.repo, _in_scopes(release))
        .with_for_update(read=True, key_share=True)
    )
    return {
        record_id: locations.Location(release.label, release.ref, file_path, gone=True)
        for record_id, file_path in session.execute(statement)
        if record_id not in located
    }


def _in_scopes(release: Release) -> ColumnElement[bool]:
    """The condition that a record's file is one of the release's (Python or native)."""
    return or_(*(col(Record.file_path).startswith(scope) for scope in release.scopes))


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _mark_gone(session: Session, release: Release, harvested: set[str]) -> int:
    """Mark this release's earlier drafts whose raise site is no longer there."""
    statement = select(col(Record.id)).where(
        col(Record.repo) == release.repo,
        col(Record.review_state) == DRAFT,
        col(Record.origin).startswith(ORIGIN_PREFIX),
        col(Record.gone_in).is_(None),
        _in_scopes(release),
    )
    gone = [
        record_id
        for record_id in session.execute(statement).scalars()
        if record_id not in harvested
    ]
    records.mark_gone(session, gone, release.spec)
    return len(gone)


def is_harvested(session: Session, spec: str) -> bool:
    """Whether this release spec was harvested into the store already."""
    return session.get(DatasetState, HARVESTED_PREFIX + spec) is not None


def harvest_release(
    session: Session, release: Release, progress: harvest.ProgressCallback | None = None
) -> tuple[harvest.HarvestResult, DraftCounts]:
    """Harvest one release and store its drafts, in this process."""
    extracted = extract_release(release, progress)
    return extracted.result, store_drafts(session, release, extracted)
