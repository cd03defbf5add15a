"""The `errkb` command: database, import/export and the server (more commands join later)."""

import os
import sys
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


def main() -> None:
    """Console-script entry point."""
    app()
