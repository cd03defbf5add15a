"""Generated reproducers in bulk: which drafts to try, their scripts generated and stored
with the records, and the figures per project.

`generate_scripts` reads each draft's raise site from its release (the unpacked release, or
the installed distribution when it is that release) and stores a script for every site the
generator handles (app.reproducers.generation.reproducer), counting the reasons of the rest.
Their runs on the real release are app.reproducers.generation.verification's.
"""

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import zip_longest
from typing import Any

from sqlalchemy import Engine, and_, delete, select
from sqlmodel import Session, col

from app import upstreams
from app.config import Settings
from app.records import service as records
from app.records.model import LOGGED_TYPES
from app.reproducers import runner
from app.reproducers.generation import reproducer
from app.reproducers.generation.sites import Generated, Reason, SiteSpec, module_name
from app.store.engine import unit_of_work
from app.store.tables import GeneratedReproducer, Record, RecordLocation
from app.upstreams import distribution_metadata, release_cache, release_errors


@dataclass(slots=True)
class ProjectFigures:
    """Per upstream project: drafts tried, scripts generated, runs, verified, the reasons
    for the rest, and the time each step took."""

    repo: str
    tried: int = 0
    generated: int = 0
    run: int = 0
    verified: int = 0
    not_importable: int = 0  # module not imported, or the call imports one missing: not run
    reasons: Counter[str] = field(default_factory=Counter)
    generate_s: float = 0.0
    verify_s: float = 0.0

    def as_json(self) -> dict[str, Any]:
        """The figures as `errkb verify --generated --json` prints them."""
        return {
            "repo": self.repo,
            "tried": self.tried,
            "generated": self.generated,
            "run": self.run,
            "verified": self.verified,
            "notImportable": self.not_importable,
            "reasons": dict(self.reasons.most_common()),
            "generateS": round(self.generate_s, 1),
            "verifyS": round(self.verify_s, 1),
        }


@dataclass(frozen=True, slots=True)
class _Draft:
    site: SiteSpec
    repo: str
    file_path: str


def draft_sites(
    session: Session,
    repo: str | None = None,
    paths: Sequence[str] = (),
    limit: int | None = None,
    exclude: Iterable[str] = (),
) -> list[_Draft]:
    """The records to try, each at its own Python raise site (a native check or a library's
    literal has no Python function to call, a log site raises nothing), in the release a
    location of it was harvested from (`name==version`: its project's current release where
    the site is there), a prefix of `paths` when any are given; `exclude` (records with a
    curated reproducer) left out.

    All of them in file and line order; with a `limit`, the current releases' first, spread
    over projects and their files in turn (one site of each file before a second of any), so
    that `errkb verify --generated --limit 40` samples what errkb harvests rather than the
    first file of one package."""
    statement = (
        select(
            col(Record.id),
            col(Record.repo),
            col(Record.error_class),
            col(Record.file_path),
            col(Record.line_number),
            col(RecordLocation.release),
            col(RecordLocation.function),
        )
        .join(
            RecordLocation,
            and_(
                col(RecordLocation.record_id) == col(Record.id),
                col(RecordLocation.file_path) == col(Record.file_path),
                col(RecordLocation.line_number) == col(Record.line_number),
                col(RecordLocation.gone).is_(False),
            ),
        )
        .where(
            col(Record.error_type).not_in(LOGGED_TYPES),  # nothing raises there
            col(Record.file_path).endswith(".py"),
        )
        .order_by(col(Record.repo), col(Record.file_path), col(Record.line_number), col(Record.id))
    )
    if repo:
        statement = statement.where(col(Record.repo) == repo)
    skipped = set(exclude)
    drafts: dict[str, _Draft] = {}
    for row in session.execute(statement):
        release = release_of(row.release)
        if row.id in skipped or release is None:
            continue
        prefix = upstreams.path_prefix(row.repo)
        in_package = row.file_path.removeprefix(prefix)
        if paths and not any(in_package.startswith(path) for path in paths):
            continue
        if upstreams.bundled_file(row.repo, row.file_path):
            continue  # another distribution's (SGLang's kernels): not the release's to run
        known = drafts.get(row.id)
        if known is not None and (_is_current(known) or not _is_current_release(*release)):
            continue
        package, version = release
        site = SiteSpec(
            record_id=row.id,
            error_class=row.error_class,
            package=package,
            version=version,
            module=module_name(row.file_path, prefix),
            line=row.line_number,
            function=row.function,
        )
        drafts[row.id] = _Draft(site, row.repo, row.file_path)
    found = list(drafts.values())
    if limit is None:
        return found
    current = [draft for draft in found if _is_current(draft)]
    older = [draft for draft in found if not _is_current(draft)]
    return (_spread(current) + _spread(older))[:limit]


def _is_current_release(package: str, version: str) -> bool:
    project = upstreams.BY_PACKAGE.get(package)
    return project is not None and project.current_release == f"{project.distribution}=={version}"


def _is_current(draft: _Draft) -> bool:
    return _is_current_release(draft.site.package, draft.site.version)


def _spread(drafts: list[_Draft]) -> list[_Draft]:
    """Drafts in turns: each project in turn, and within a project each of its files in turn
    (a file's sites in line order)."""
    by_repo: dict[str, dict[str, list[_Draft]]] = {}
    for draft in drafts:
        by_repo.setdefault(draft.repo, {}).setdefault(draft.file_path, []).append(draft)
    turns = {
        repo: [site for rank in zip_longest(*files.values()) for site in rank if site is not None]
        for repo, files in by_repo.items()
    }
    return [draft for rank in zip_longest(*turns.values()) for draft in rank if draft is not None]


def release_of(release: str) -> tuple[str, str] | None:
    """(package, version) of a harvested release: `vllm==0.33.0`, or a source folder of a
    known upstream at a version tag (`pytorch/pytorch@v2.13.0`); None for another folder."""
    if "==" in release:
        package, _, version = release.partition("==")
        return package, version
    repo, _, ref = release.partition("@")
    project = upstreams.BY_REPO.get(repo)
    version = ref.removeprefix("v")
    if project is None or not version[:1].isdigit():
        return None
    return project.distribution, version


def generate_scripts(
    engine: Engine,
    settings: Settings,
    repo: str | None = None,
    paths: Sequence[str] = (),
    limit: int | None = None,
    with_curated: bool = False,
) -> tuple[list[Generated], dict[str, ProjectFigures]]:
    """Generate and store a script for each draft the generator handles; figures per repo.

    Records with a curated reproducer are left out, unless `with_curated` (a measure of the
    generator on sites a curator proved too: the record's page and API still show the
    curated one)."""
    releases = release_cache.Upstream(settings.cache_dir)
    curated = set() if with_curated else {i.record_id for i in runner.all_reproducers(settings)}
    with Session(engine) as session:
        drafts = draft_sites(session, repo, paths, limit, curated)
    figures: dict[str, ProjectFigures] = {}
    sources: dict[tuple[str, str, str], str | None] = {}
    made: list[Generated] = []
    for draft in drafts:
        start = time.perf_counter()
        project = upstreams.BY_REPO.get(draft.repo)
        figure = figures.setdefault(draft.repo, ProjectFigures(draft.repo))
        figure.tried += 1
        site = draft.site
        installed = project is not None and project.installed
        if installed and distribution_metadata.installed_version(site.package) != site.version:
            figure.reasons[Reason.NOT_INSTALLED.value] += 1
            continue
        key = (site.package, site.version, draft.file_path)
        if key not in sources:
            sources[key] = _source(releases, site.package, site.version, draft)
        known = project.plain_values if project else {}
        outcome = reproducer.generate(site, sources[key], known)
        if isinstance(outcome, Generated):
            made.append(outcome)
            figure.generated += 1
        else:
            figure.reasons[outcome.reason.value] += 1
        figure.generate_s += time.perf_counter() - start
    now = datetime.now(UTC)
    tried = [draft.site.record_id for draft in drafts]
    with unit_of_work(engine) as session:
        for chunk in range(0, len(tried), 500):
            ids = tried[chunk : chunk + 500]
            session.execute(
                delete(GeneratedReproducer).where(col(GeneratedReproducer.record_id).in_(ids))
            )
        for generated in made:
            session.add(
                GeneratedReproducer(
                    record_id=generated.record_id,
                    package=generated.package,
                    version=generated.version,
                    module=generated.module,
                    trigger_call=generated.trigger_call,
                    fix_call=generated.fix_call,
                    direct_state=generated.direct_state,
                    script=generated.script,
                    generated_at=now,
                )
            )
        records.bump_reproducers_version(session)
    return made, figures


def _source(
    releases: release_cache.Upstream, package: str, version: str, draft: _Draft
) -> str | None:
    prefix = upstreams.path_prefix(draft.repo)
    try:
        path = releases.release_root(package, version) / draft.file_path.removeprefix(prefix)
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError, release_errors.UpstreamError):
        return None


def stored_script(session: Session, record_id: str) -> GeneratedReproducer | None:
    """The generated reproducer of a record, or None."""
    return session.get(GeneratedReproducer, record_id)
