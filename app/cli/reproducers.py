"""The reproducer commands: verify (here, from a bundle, or generated), drift, and the runs
made elsewhere (runs import, runs keep)."""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from sqlmodel import Session

from app.cli.options import settings_of
from app.config import Settings
from app.records import service as records
from app.store.engine import open_store, unit_of_work

if TYPE_CHECKING:  # imported where used: the commands that need neither start faster
    from app.reproducers.runner import RunOutcome
    from app.store.tables import GeneratedReproducer


def run_runs_import(settings: Settings, paths: list[Path]) -> bool:
    """Import run files and print what happened; shared by `runs import` and `serve`.
    False when a file was refused (nothing of it is kept)."""
    from app.reproducers import runs

    engine = open_store(settings)
    with unit_of_work(engine) as session:
        report = runs.import_runs(session, paths, origin_root=settings.runs_dir.parent)
    for refusal in report.refused:
        typer.echo(f"refused {refusal}", err=True)
    typer.echo(
        f"runs: added {report.added}, already kept {report.known}, "
        f"waiting for their record {len(report.without_record)}"
        + (" -- nothing imported (a file with a line that is not a run)" if report.refused else "")
    )
    return not report.refused


def runs_import_command(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(help="Run files (.jsonl, as `errkb verify --out` writes) or folders."),
    ],
) -> None:
    """Keep the runs of these files beside their records (each run once)."""
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        typer.echo(f"error: no such file: {', '.join(missing)}", err=True)
        raise typer.Exit(2)
    if not run_runs_import(settings_of(ctx), paths):
        raise typer.Exit(1)


def runs_keep_command(
    source: Annotated[Path, typer.Argument(help="A run file (`errkb verify --out`).")],
    dest: Annotated[
        Path, typer.Argument(help="The file to ship (data/runs/NAME.jsonl, or .jsonl.gz).")
    ],
) -> None:
    """Keep the runs that passed, without their tracebacks, in a file to ship in data/runs/."""
    from app.reproducers import runs

    if not source.is_file():
        typer.echo(f"error: no such file: {source}", err=True)
        raise typer.Exit(2)
    try:
        kept = runs.keep_passed(source, dest)
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"kept {kept} passed runs in {dest}")


def verify_command(
    ctx: typer.Context,
    record_ids: Annotated[
        list[str] | None, typer.Argument(help="Record ids; every reproducer when omitted.")
    ] = None,
    device: Annotated[
        str, typer.Option(help="cpu, cuda, or auto (each reproducer's own first device).")
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    generated: Annotated[
        bool,
        typer.Option(
            "--generated",
            help="Generate reproducers from the drafts' raise sites, store them with the "
            "records, run them on the real release and print the figures per project.",
        ),
    ] = False,
    repo: Annotated[
        str | None, typer.Option(help="With --generated: only this repository's records.")
    ] = None,
    path: Annotated[
        list[str] | None,
        typer.Option(
            help="With --generated: only files under this path of the package "
            "(vllm/config/); repeat for more."
        ),
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="With --generated: try at most this many drafts.")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, help="With --generated: scripts run at once.")] = 1,
    torch: Annotated[
        str,
        typer.Option(
            help="pinned: torch reproducers run only on the release they name; installed: on "
            "the installed torch (a GPU machine's own), the run naming it."
        ),
    ] = "pinned",
    bundle: Annotated[
        Path | None,
        typer.Option(
            help="Make a bundle in this folder for a GPU machine without network (every "
            "curated CUDA reproducer, the store's generated CUDA-only ones, the wheels they "
            "import) instead of running anything; `python3 -m app.reproducers.offline DIR` "
            "runs it there.",
        ),
    ] = None,
    python_version: Annotated[
        str, typer.Option(help="With --bundle: the GPU machine's Python (wheels are for it).")
    ] = "3.12",
    platform: Annotated[
        list[str] | None,
        typer.Option(help="With --bundle: a platform tag of its wheels; repeat for more."),
    ] = None,
    device_torch: Annotated[
        str | None,
        typer.Option(
            help="With --bundle: the torch release the GPU machine has; generated torch "
            "scripts move to where its harvest found their raise."
        ),
    ] = None,
    from_bundle: Annotated[
        Path | None,
        typer.Option(help="Run the reproducers of a bundle made with --bundle (stores nothing)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Also write each run, with the machine it ran on, to this run file (one JSON "
            "line a run: what `errkb runs import` reads)."
        ),
    ] = None,
) -> None:
    """Run reproducers against the real upstream code and store each run."""
    from app.reproducers import runner

    if device not in ("auto", "cpu", "cuda"):
        raise typer.BadParameter("must be cpu, cuda or auto", param_hint="--device")
    if torch not in ("pinned", "installed"):
        raise typer.BadParameter("must be pinned or installed", param_hint="--torch")
    settings = settings_of(ctx)
    commit = _commit() if out is not None else None  # of the code that runs, before it runs
    if bundle is not None:
        raise typer.Exit(
            _make_bundle(settings, bundle, python_version, platform, device_torch, record_ids)
        )
    if from_bundle is not None:
        raise typer.Exit(_run_bundle(settings, from_bundle, device, torch, out))
    if generated:
        raise typer.Exit(
            verify_generated(
                settings, record_ids or [], repo, path or [], limit, workers, as_json, out, commit
            )
        )
    try:
        outcomes = runner.verify(open_store(settings), settings, record_ids or [], device, torch)
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    if out is not None:
        _write_runs(out, outcomes, commit)
    if as_json:
        typer.echo(json.dumps([verify_json(outcome) for outcome in outcomes], indent=2))
    else:
        for outcome in outcomes:
            typer.echo(
                f"{outcome.record_id}  {outcome.status:<7}  {outcome.device:<4}  "
                f"{outcome.duration_s:6.1f} s  {outcome.reason}"
            )
    raise typer.Exit(runner.exit_status(outcomes))


def _commit() -> str | None:
    from app.config import PROJECT_ROOT
    from app.reproducers import runs

    return runs.checkout_commit(PROJECT_ROOT)


def _write_runs(
    out: Path,
    outcomes: list["RunOutcome"],
    commit: str | None,
    scripts: "dict[str, GeneratedReproducer] | None" = None,
) -> None:
    from app.reproducers import runs

    written = runs.write_runs(out, outcomes, commit, scripts)
    typer.echo(f"wrote {written} runs to {out}", err=True)


def _make_bundle(
    settings: Settings,
    folder: Path,
    python_version: str,
    platforms: list[str] | None,
    device_torch: str | None,
    record_ids: list[str] | None,
) -> int:
    """`errkb verify --bundle DIR`: make the bundle, say what is in it and what is not."""
    from app.reproducers import bundle

    try:
        manifest = bundle.make_bundle(
            settings,
            open_store(settings),
            folder,
            python_version,
            platforms or bundle.DEFAULT_PLATFORMS,
            device_torch,
            record_ids=record_ids or (),
        )
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        return 1
    generated = sum(len(ids) for ids in manifest.generated.values())
    typer.echo(
        f"{folder}: {len(manifest.curated)} curated and {generated} generated reproducers, "
        f"{len(manifest.wheels)} wheels, environments of "
        f"{', '.join(manifest.environments) or 'no release'}; "
        f"{manifest.bytes / 2**20:.1f} MiB"
    )
    for left in manifest.left_out:
        typer.echo(f"left out {left['what']}: {left['why']}")
    return 0


def _run_bundle(settings: Settings, folder: Path, device: str, torch: str, out: Path | None) -> int:
    """`errkb verify --from-bundle DIR`: run what a bundle holds; exit 1 when a curated
    reproducer that could run failed (a generated one that fails is a draft without one)."""
    from app.reproducers import bundle, runner

    try:
        manifest = bundle.read_manifest(folder)
        outcomes = bundle.run_bundle(
            settings, folder, "cuda" if device == "auto" else device, torch
        )
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        return 2
    if out is not None:
        _write_runs(out, outcomes, manifest.commit)
    for outcome in outcomes:
        typer.echo(
            f"{outcome.record_id}  {outcome.status:<7}  {outcome.device:<4}  "
            f"{outcome.duration_s:6.1f} s  {outcome.reason[:120]}"
        )
    passed = sum(outcome.status == "passed" for outcome in outcomes)
    typer.echo(f"passed {passed} of {len(outcomes)}")
    curated = [outcome for outcome in outcomes if outcome.record_id in manifest.curated]
    return runner.exit_status(curated)


def verify_generated(
    settings: Settings,
    record_ids: list[str],
    repo: str | None,
    paths: list[str],
    limit: int | None,
    workers: int,
    as_json: bool,
    out: Path | None = None,
    commit: str | None = None,
) -> int:
    """Generate (unless record ids are named: those run as stored), verify, print figures.

    Exits 0: a generated script that fails is a draft without a reproducer, not a broken
    build; the figures say how many."""
    from app.reproducers.generation import bulk, verification

    engine = open_store(settings)
    figures: dict[str, bulk.ProjectFigures] = {}
    if not record_ids:
        made, figures = bulk.generate_scripts(engine, settings, repo, paths, limit)
        record_ids = [script.record_id for script in made]
    if record_ids:
        outcomes, figures = verification.verify_scripts(
            engine, settings, record_ids, workers, figures
        )
    else:
        outcomes = []
    if out is not None:
        with Session(engine) as session:
            scripts = {
                row.record_id: row for row, _, _ in verification.stored_rows(session, record_ids)
            }
        _write_runs(out, outcomes, commit, scripts)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "projects": [figure.as_json() for figure in figures.values()],
                    "runs": [verify_json(outcome) for outcome in outcomes],
                },
                indent=2,
            )
        )
        return 0
    for outcome in outcomes:
        typer.echo(
            f"{outcome.record_id}  {outcome.status:<7}  {outcome.duration_s:6.1f} s  "
            f"{outcome.reason[:120]}"
        )
    for figure in figures.values():
        typer.echo(
            f"{figure.repo}: tried {figure.tried}, generated {figure.generated}, not "
            f"importable {figure.not_importable}, run {figure.run}, verified {figure.verified}"
            f" ({figure.verified / max(1, figure.run):.0%} of those run); generate "
            f"{figure.generate_s:.1f} s, verify {figure.verify_s:.1f} s"
        )
        for reason, count in figure.reasons.most_common():
            typer.echo(f"  {count:6d}  {reason}")
    return 0


def verify_json(outcome: "RunOutcome") -> dict:
    """The JSON form of a run for `errkb verify --json` (the CI artefact): a run file's line
    (app/reproducers/runs.py), the machine it ran on included."""
    from app.reproducers import runs

    return runs.run_line(outcome, None)


def drift_command(
    ctx: typer.Context,
    record_ids: Annotated[
        list[str] | None, typer.Argument(help="Record ids; every record with a reproducer.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    with_generated: Annotated[
        bool,
        typer.Option(
            "--generated",
            help="Run each verified generated reproducer on the newest harvested release "
            "newer than the one it pins: one that stops raising is drift.",
        ),
    ] = False,
) -> None:
    """Check whether each record's raise site still holds in its target upstream release."""
    from dataclasses import asdict

    from app.reproducers import drift, runner
    from app.reproducers.generation import verification
    from app.wire.reproducers import DriftOut

    settings = settings_of(ctx)
    engine = open_store(settings)
    if with_generated:
        found_drift, unjudged = verification.check_drift(engine, settings, record_ids or [])
        for record_id, reason in unjudged.items():
            typer.echo(f"{record_id}: not judged: {reason}", err=True)
        if as_json:
            typer.echo(json.dumps([asdict(o) for o in found_drift], indent=2))
            return
        for o in found_drift:
            line = "-" if o.found_line is None else o.found_line
            typer.echo(
                f"{o.record_id}  {o.package}=={o.version}  {o.status:<7}  {line}  {o.detail}"
            )
        return
    ids = record_ids or [info.record_id for info in runner.all_reproducers(settings)]
    outcomes = []
    checks: list[dict[str, Any]] = []
    with Session(engine) as session:
        found = records.get_records(session, ids)
    # Checking may download a release: the write lock is only taken to store each outcome.
    for record_id in ids:
        stored = found.get(record_id)
        outcome = drift.check_drift(settings, stored) if stored else None
        if outcome is None:
            typer.echo(f"{record_id}: no record with a reproducer and a source line", err=True)
            continue
        with unit_of_work(engine) as session:
            stored_check = DriftOut.model_validate(drift.store_drift(session, outcome))
        outcomes.append(outcome)
        checks.append({"recordId": record_id} | stored_check.model_dump(mode="json", by_alias=True))
    if as_json:  # each check as GET /api/errors/{id}/reproducer shows it in `drift`
        typer.echo(json.dumps(checks, indent=2))
        return
    for o in outcomes:
        line = "-" if o.found_line is None else o.found_line
        typer.echo(f"{o.record_id}  {o.package}=={o.version}  {o.status:<7}  {line}  {o.detail}")
