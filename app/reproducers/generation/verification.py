"""Generated reproducers verified on the real release, and again on newer ones (drift).

`verify_scripts` runs the stored scripts the way the curated ones run (app.reproducers.runner:
one subprocess each, with a time limit, runs stored beside the record), after one import
probe per release, so a module that cannot be imported on CPU is counted once per script
without a subprocess each. Nothing counts as verified unless its run passed. `check_drift`
runs each verified script on the newest harvested release of its package, its lines moved to
where the harvest found the raise there.
"""

import ast
import functools
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, func, select
from sqlmodel import Session, col

from app import upstreams
from app.config import PROJECT_ROOT, Settings
from app.records import site_keys
from app.reproducers import drift, forked, runner
from app.reproducers.generation.bulk import ProjectFigures, release_of
from app.store.engine import unit_of_work
from app.store.tables import GeneratedReproducer, Record, RecordLocation, ReproducerRun
from app.upstreams import distribution_metadata, release_cache, release_errors

GENERATED_TIMEOUT_S = 60.0  # one generated script: a constructor call, twice
PROBE_TIMEOUT_S = 300.0  # a zygote importing the release's top package and errkb's matcher
NOT_IMPORTABLE = "the module cannot be imported on CPU"
IMPORTED_BY_THE_CALL = "the call imports a module not installed on CPU"
ENVIRONMENT = (NOT_IMPORTABLE, IMPORTED_BY_THE_CALL)  # the environment's, not the script's
GPU_ONLY = "CUDA-only: marked for the GPU runner, not run on CPU"


def verify_scripts(
    engine: Engine,
    settings: Settings,
    record_ids: Sequence[str],
    workers: int = 1,
    figures: dict[str, ProjectFigures] | None = None,
) -> tuple[list[runner.RunOutcome], dict[str, ProjectFigures]]:
    """Run the stored scripts of these records on their real release and store each run.

    Each release gets its cached environment first (`Upstream.ensure_environment`); then
    its scripts run in children forked from a process that imported the release's top
    package (app.reproducers.forked), in module order, split into `workers` runs at once. A
    target module that cannot be imported on CPU fails its scripts' runs, each counted with
    that reason."""
    figures = figures if figures is not None else {}
    with Session(engine) as session:
        rows = stored_rows(session, record_ids)
    releases = release_cache.Upstream(settings.cache_dir)
    by_release: dict[tuple[str, str], list[tuple[GeneratedReproducer, str, str]]] = {}
    for item in [item for item in rows if "cpu" not in script_devices(item[0].script)]:
        figures.setdefault(item[1], ProjectFigures(item[1])).reasons[GPU_ONLY] += 1
    rows = [item for item in rows if "cpu" in script_devices(item[0].script)]
    for item in sorted(rows, key=lambda item: item[0].module):
        by_release.setdefault((item[0].package, item[0].version), []).append(item)
    unprepared = {
        key: _prepare(releases, *key, [item[0].module for item in items])
        for key, items in by_release.items()
    }
    shards = [
        (key, part)
        for key, items in by_release.items()
        for part in _shards(items, max(1, workers))
        if part
    ]
    outcomes: list[runner.RunOutcome] = []
    with tempfile.TemporaryDirectory(prefix="errkb-generated-") as folder:
        scratch = Path(folder)

        lock = threading.Lock()

        def keep(repo: str, outcome: runner.RunOutcome | str) -> None:
            """Count one script's outcome and store its run at once: a long verification
            stopped halfway keeps the runs it made."""
            with lock:
                figure = figures.setdefault(repo, ProjectFigures(repo))
                if isinstance(outcome, str):
                    figure.not_importable += 1
                    figure.reasons[f"{NOT_IMPORTABLE} ({outcome})"] += 1
                    return
                with unit_of_work(engine) as session:
                    runner.store_run(session, outcome)
                reason = failure_reason(outcome) if outcome.status != "passed" else None
                if reason is not None and reason.startswith(ENVIRONMENT):
                    figure.not_importable += 1
                    figure.reasons[reason] += 1
                    return
                figure.run += 1
                figure.verify_s += outcome.duration_s / max(1, workers)
                if reason is None:
                    figure.verified += 1
                else:
                    figure.reasons[reason] += 1
                outcomes.append(outcome)

        def run_shard(
            shard: tuple[tuple[str, str], list[tuple[GeneratedReproducer, str, str]]],
        ) -> None:
            key, items = shard
            failure = unprepared[key]
            if failure is not None:
                for _row, repo, _document in items:
                    keep(repo, failure)
                return
            run_release(settings, scratch, key, items, keep)

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(run_shard, shards))
    return outcomes, figures


def _shards(items: list[Any], count: int) -> list[list[Any]]:
    """`count` runs of consecutive items, a module's scripts kept together where they can
    be (the zygote imports a module once, for the next scripts of it)."""
    size = -(-len(items) // count)
    return [items[start : start + size] for start in range(0, len(items), size)]


def script_module(script: str) -> str:
    """The module a generated script targets (`module='vllm.config'` in its TARGET)."""
    found = re.search(r"(?m)^    module=('[^']*'|\"[^\"]*\"),$", script)
    return ast.literal_eval(found.group(1)) if found else ""


def script_devices(script: str) -> tuple[str, ...]:
    """The devices a generated script declares (`DEVICES = ("cpu",)`)."""
    for node in ast.parse(script).body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "DEVICES"
        ):
            return tuple(ast.literal_eval(node.value))
    return ()


def _prepare(
    releases: release_cache.Upstream, package: str, version: str, modules: Sequence[str]
) -> str | None:
    """Install what these modules of the release import at load into its cached
    environment; why not, if it fails."""
    try:
        if distribution_metadata.installed_version(package) != version:
            releases.ensure_environment(package, version, modules)
    except release_errors.UpstreamError as error:
        return f"environment: {error}"
    return None


def run_release(
    settings: Settings,
    scratch: Path,
    key: tuple[str, str],
    items: list[tuple[GeneratedReproducer, str, str]],
    keep: Callable[[str, runner.RunOutcome | str], None],
    args: tuple[str, ...] = ("--device", "cpu"),
) -> None:
    """Scripts of one release, each in a child of one zygote with these arguments, each
    outcome handed to `keep` as it comes, one per script in order; a zygote that dies is
    started again for the scripts after the one it died in. Each target module is imported
    by the zygote before its first script (outside the scripts' time limit, which a loaded
    machine's import of vLLM's config can pass): one that does not import is handed to
    `keep` as why, for each of its scripts, none of which runs."""
    package, version = key
    pending = list(items)
    loaded: dict[str, str | None] = {}  # target module -> why it does not import, or None
    while pending:
        start = time.perf_counter()
        project = upstreams.BY_PACKAGE.get(package)
        top = package if project is not None and project.installed else None
        with forked.Zygote(
            package, version, top, _environment(settings), PROBE_TIMEOUT_S
        ) as zygote:
            if zygote.error is not None:
                for _row, repo, _document in pending:
                    keep(repo, zygote.error)
                return
            import_s = time.perf_counter() - start
            while pending:
                row, repo, document = pending.pop(0)
                if row.module not in loaded:  # imported once, outside the scripts' limit
                    try:
                        loaded[row.module] = zygote.load(row.module, PROBE_TIMEOUT_S)
                    except forked.ZygoteGone as gone:
                        loaded[row.module] = str(gone)
                        keep(repo, str(gone))
                        break
                if loaded[row.module] is not None:
                    keep(repo, str(loaded[row.module]))
                    continue
                try:
                    outcome = zygote.run(
                        _script_file(scratch, row, document), GENERATED_TIMEOUT_S, args
                    )
                except forked.ZygoteGone as gone:
                    keep(
                        repo,
                        runner.RunOutcome(
                            record_id=row.record_id,
                            device="cpu",
                            status="error",
                            reason=f"no result: {gone}",
                            duration_s=0.0,
                            output_tail="",
                            result=None,
                            started_at=datetime.now(UTC),
                        ),
                    )
                    break
                outcome.duration_s = round(outcome.duration_s + import_s, 3)
                import_s = 0.0  # the zygote's import counts once, with its first script
                keep(repo, outcome)


def stored_rows(
    session: Session, record_ids: Sequence[str]
) -> list[tuple[GeneratedReproducer, str, str]]:
    """The stored scripts of these records (all when none are named) with each record's
    repository and document, in file and line order."""
    statement = (
        select(GeneratedReproducer, col(Record.repo), col(Record.document))
        .join(Record, col(Record.id) == col(GeneratedReproducer.record_id))
        .order_by(col(Record.repo), col(Record.file_path), col(Record.line_number))
    )
    if record_ids:
        statement = statement.where(col(GeneratedReproducer.record_id).in_(list(record_ids)))
    return [(row[0], row[1], row[2]) for row in session.execute(statement)]


def _environment(settings: Settings) -> dict[str, str]:
    """What a script's process needs: errkb's own package on its path, the cache."""
    path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p)
    return os.environ | {"PYTHONPATH": path, "ERRKB_CACHE_DIR": str(settings.cache_dir)}


def _script_file(scratch: Path, row: GeneratedReproducer, document: str) -> forked.Script:
    """A stored script as a file of its own, its record beside it for the checks."""
    folder = scratch / row.record_id
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"{row.record_id}.py"
    script.write_text(row.script, encoding="utf-8")
    (folder / f"{row.record_id}.json").write_text(document, encoding="utf-8")
    return forked.Script(row.record_id, script, folder)


def failure_reason(outcome: runner.RunOutcome) -> str:
    """A run that did not pass, in one of a few words, for the figures."""
    result = outcome.result or {}
    if result.get("trigger") is None:
        reason = outcome.reason
        if "importing" in reason:
            return f"{NOT_IMPORTABLE} ({reason.partition(' failed: ')[2][:60]})"
        if "timed out" in reason:
            return "timed out"
        return f"error: {reason[:80]}"
    for check in ("trigger", "fix"):
        part = result.get(check) or {}
        if part.get("status") != "passed":
            detail = str(part.get("detail", ""))
            if part.get("status") == "error" and detail.startswith("ModuleNotFoundError"):
                return f"{IMPORTED_BY_THE_CALL} ({detail.partition(': ')[2][:60]})"
            if "SiteNotReached" in detail or "raised SiteNotReached" in detail:
                return f"{check}: the call raised before reaching the site"
            if "raised nothing" in detail:
                return f"{check}: raised nothing"
            if "the record says" in detail:
                return f"{check}: raised another class"
            if "does not match" in detail:
                return f"{check}: the message does not match the pattern"
            if "never ran" in detail:
                return f"{check}: the guard never ran"
            return f"{check}: {detail[:60]}"
    return outcome.status


def verified_counts(session: Session) -> dict[str, int]:
    """Records with a generated script, and those whose latest run passed."""
    generated = session.execute(select(func.count()).select_from(GeneratedReproducer)).scalar_one()
    latest = (
        select(col(ReproducerRun.record_id), func.max(ReproducerRun.id).label("last"))
        .join(
            GeneratedReproducer,
            col(GeneratedReproducer.record_id) == col(ReproducerRun.record_id),
        )
        .group_by(col(ReproducerRun.record_id))
        .subquery()
    )
    verified = session.execute(
        select(func.count())
        .select_from(ReproducerRun)
        .join(latest, col(ReproducerRun.id) == latest.c.last)
        .where(col(ReproducerRun.status) == "passed")
    ).scalar_one()
    return {"generated": int(generated), "verified": int(verified)}


def drift_releases(session: Session, row: GeneratedReproducer) -> list[tuple[str, RecordLocation]]:
    """The record's locations in the harvested releases of its package newer than the one
    its script was verified on (`vllm==0.34.0` after `vllm==0.33.0`, or a source folder at
    a newer tag), with each release's version, oldest first."""
    pinned = site_keys.release_order(row.version)
    newer = []
    for found_at in session.execute(
        select(RecordLocation).where(col(RecordLocation.record_id) == row.record_id)
    ).scalars():
        release = release_of(found_at.release)
        if (
            release is not None
            and release[0] == row.package
            and site_keys.release_order(release[1]) > pinned
        ):
            newer.append((release[1], found_at))
    return sorted(newer, key=lambda pair: site_keys.release_order(pair[0]))


def retargeted(script: str, version: str, shift: int) -> str:
    """A generated script run on another release: its pinned version replaced, and its raise
    and guard lines moved by `shift` (where the harvest found the raise in that release)."""

    def moved(match: re.Match[str]) -> str:
        return str(int(match.group(0)) + shift)

    script = re.sub(r"(?m)^    version='[^']*',$", f"    version={version!r},", script, count=1)
    script = re.sub(
        r"(?m)^    raise_line=(\d+),$",
        lambda m: f"    raise_line={int(m.group(1)) + shift},",
        script,
        count=1,
    )
    return re.sub(
        r"(?m)^    guard_lines=\((\d+), (\d+)\),$",
        lambda m: f"    guard_lines=({int(m.group(1)) + shift}, {int(m.group(2)) + shift}),",
        script,
        count=1,
    )


def _collect(
    into: list[runner.RunOutcome | str], _repo: str, found: runner.RunOutcome | str
) -> None:
    into.append(found)


def pinned_line(script: str) -> int | None:
    """The raise line a generated script checks, in the release it pins."""
    found = re.search(r"(?m)^    raise_line=(\d+),$", script)
    return int(found.group(1)) if found else None


def check_drift(
    engine: Engine, settings: Settings, record_ids: Sequence[str] = ()
) -> tuple[list[drift.DriftOutcome], dict[str, str]]:
    """Drift of verified generated reproducers, stored as the curated ones' is (DriftCheck,
    shown by the record page and GET /api/errors/{id}/reproducer).

    Each script whose latest run passed runs again on the newest harvested release of its
    package that is newer than the one it pins, its lines moved to where the harvest found
    the raise there: `same` or `moved` when the trigger still raises the record's error and
    the fix holds, `changed` when it stopped ("the generated reproducer stopped raising on
    vllm 0.34.0: ..."), `gone` when that release has no site of the record. A run the
    environment stopped (the module does not import there) says nothing of the code: no
    check is stored, and the second mapping says why (record id -> reason)."""
    with Session(engine) as session:
        plans = []
        for row, repo, document in stored_rows(session, record_ids):
            runs = runner.latest_runs(session, row.record_id, 1)
            newer = drift_releases(session, row)
            if runs and runs[0].status == "passed" and newer:
                plans.append((row, repo, document, newer[-1]))
    outcomes: list[drift.DriftOutcome] = []
    unjudged: dict[str, str] = {}
    releases = release_cache.Upstream(settings.cache_dir)
    with tempfile.TemporaryDirectory(prefix="errkb-generated-drift-") as folder:
        for row, repo, document, (version, location) in plans:
            package = row.package
            pinned = pinned_line(row.script)
            if location.gone or location.line_number is None or pinned is None:
                detail = f"the harvest of {package} {version} found no raise site of the record"
                outcomes.append(
                    drift.DriftOutcome(row.record_id, package, version, "gone", None, detail)
                )
                continue
            shift = location.line_number - pinned
            moved = GeneratedReproducer(
                **{
                    **row.model_dump(),
                    "version": version,
                    "script": retargeted(row.script, version, shift),
                }
            )
            results: list[runner.RunOutcome | str] = []
            failure = _prepare(releases, package, version, [row.module])
            if failure is not None:
                unjudged[row.record_id] = failure
                continue
            run_release(
                settings,
                Path(folder),
                (package, version),
                [(moved, repo, document)],
                functools.partial(_collect, results),
            )
            outcome = results[0] if results else "no result"
            if isinstance(outcome, str) or outcome.status == "error":
                unjudged[row.record_id] = outcome if isinstance(outcome, str) else outcome.reason
                continue
            line = location.line_number
            if outcome.status == "passed":
                status = "same" if shift == 0 else "moved"
                detail = (
                    f"the generated trigger still raises the record's error on {package} {version}"
                )
            else:
                status, line = "changed", location.line_number
                detail = (
                    f"the generated reproducer stopped raising on {package} {version}: "
                    f"{failure_reason(outcome)}"
                )
            outcomes.append(
                drift.DriftOutcome(row.record_id, package, version, status, line, detail)
            )
    with unit_of_work(engine) as session:
        for check in outcomes:
            drift.store_drift(session, check)
    return outcomes, unjudged
