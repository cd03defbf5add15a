"""The `errkb` command: database, import/export and the server (more commands join later)."""

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from sqlmodel import Session

from app import records
from app.config import Settings, get_settings
from app.db import open_store

app = typer.Typer(
    help="errkb: error knowledge for ML-serving infrastructure.", no_args_is_help=True
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")


def _settings() -> Settings:
    return get_settings()


@app.callback()
def configure(
    database_url: Annotated[
        str | None,
        typer.Option(help="SQLAlchemy URL of the store (overrides ERRKB_DATABASE_URL)."),
    ] = None,
) -> None:
    """Options shared by every command."""
    if database_url:
        os.environ["ERRKB_DATABASE_URL"] = database_url
        get_settings.cache_clear()


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply pending schema migrations."""
    settings = _settings()
    open_store(settings)
    typer.echo(f"database at head: {settings.database_url}")


def run_import(settings: Settings, paths: list[Path], partial: bool) -> records.ImportReport:
    """Import record files and print what happened; shared by `import` and `serve`."""
    engine = open_store(settings)
    with Session(engine) as session:
        report = records.import_paths(session, paths, partial=partial)
    for rejection in report.rejected:
        typer.echo(f"rejected {rejection}", err=True)
    counts = report.counts
    typer.echo(
        f"created {counts.created}, updated {counts.updated}, unchanged {counts.unchanged}, "
        f"rejected {len(report.rejected)}"
        + ("" if report.committed else " -- nothing imported (all-or-nothing; see --partial)")
    )
    return report


@app.command("import")
def import_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Record files (.json, .jsonl) or folders of them.")
    ],
    partial: Annotated[
        bool, typer.Option("--partial", help="Import the valid records even if some are rejected.")
    ] = False,
) -> None:
    """Validate and upsert records by id; all-or-nothing unless --partial."""
    report = run_import(_settings(), paths, partial)
    if report.rejected:
        raise typer.Exit(1)


@app.command("export")
def export_command(
    out: Annotated[
        Path | None, typer.Option(help="File to write (JSON Lines); standard output if omitted.")
    ] = None,
    state: Annotated[
        str | None, typer.Option(help="Only records in this review state (reviewed or draft).")
    ] = None,
) -> None:
    """Write every record as JSON Lines in a stable key and record order."""
    engine = open_store(_settings())
    with Session(engine) as session:
        lines = records.export_lines(session, state)
        if out is None:
            sys.stdout.writelines(lines)
            return
        temporary = out.with_name(out.name + ".tmp")
        with temporary.open("w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(lines)
        temporary.replace(out)


@app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Worker processes.", min=1)] = 1,
    import_data: Annotated[
        bool, typer.Option("--import-data/--no-import-data", help="Import the data folder first.")
    ] = True,
) -> None:
    """Migrate, import the curated records, and serve the API and pages."""
    import uvicorn

    settings = _settings()
    open_store(settings)
    if import_data and run_import(settings, [settings.data_dir], partial=False).rejected:
        raise typer.Exit(1)
    uvicorn.run("app.main:create_app", factory=True, host=host, port=port, workers=workers)


@app.command("verify")
def verify_command(
    record_ids: Annotated[
        list[str] | None, typer.Argument(help="Record ids; every reproducer when omitted.")
    ] = None,
    device: Annotated[
        str, typer.Option(help="cpu, cuda, or auto (each reproducer's own first device).")
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Run reproducers against the real upstream code and store each run."""
    from app import verify

    if device not in ("auto", "cpu", "cuda"):
        raise typer.BadParameter("must be cpu, cuda or auto", param_hint="--device")
    settings = _settings()
    with Session(open_store(settings)) as session:
        try:
            outcomes = verify.verify(session, settings, record_ids or [], device)
        except ValueError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps([verify_json(outcome) for outcome in outcomes], indent=2))
    else:
        for outcome in outcomes:
            typer.echo(
                f"{outcome.record_id}  {outcome.status:<7}  {outcome.device:<4}  "
                f"{outcome.duration_s:6.1f} s  {outcome.reason}"
            )
    raise typer.Exit(verify.exit_status(outcomes))


def verify_json(outcome) -> dict:
    """The JSON form of a run for `errkb verify --json` (the CI artefact)."""
    return {
        "id": outcome.record_id,
        "status": outcome.status,
        "device": outcome.device,
        "reason": outcome.reason,
        "durationS": outcome.duration_s,
        "startedAt": outcome.started_at.isoformat(),
        "result": outcome.result,
    }


@app.command("drift")
def drift_command(
    record_ids: Annotated[
        list[str] | None, typer.Argument(help="Record ids; every record with a reproducer.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
) -> None:
    """Check whether each record's raise site still holds in its target upstream release."""
    from app import verify

    settings = _settings()
    ids = record_ids or [info.record_id for info in verify.all_reproducers(settings)]
    outcomes = []
    with Session(open_store(settings)) as session:
        for record_id in ids:
            stored = records.get_record(session, record_id)
            outcome = verify.check_drift(settings, stored) if stored else None
            if outcome is None:
                typer.echo(f"{record_id}: no record with a reproducer and a source line", err=True)
                continue
            verify.store_drift(session, outcome)
            session.commit()
            outcomes.append(outcome)
    if as_json:
        typer.echo(json.dumps([asdict(outcome) for outcome in outcomes], indent=2))
        return
    for o in outcomes:
        line = "-" if o.found_line is None else o.found_line
        typer.echo(f"{o.record_id}  {o.package}=={o.version}  {o.status:<7}  {line}  {o.detail}")


def main() -> None:
    """Console-script entry point."""
    app()
