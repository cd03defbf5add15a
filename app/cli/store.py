"""The commands that fill and read the store: db upgrade, db copy, import, export."""

import sys
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy.engine import make_url
from sqlmodel import Session

from app.cli.options import settings_of, with_filter_options
from app.config import Settings
from app.records import service as records
from app.records.filters import RecordFilters
from app.store.engine import open_store, unit_of_work


def db_upgrade(ctx: typer.Context) -> None:
    """Apply pending schema migrations."""
    settings = settings_of(ctx)
    open_store(settings)
    typer.echo(f"database at head: {settings.database_url}")


def db_copy(
    ctx: typer.Context,
    source: Annotated[
        str,
        typer.Option("--from", help="SQLAlchemy URL of the store to copy (SQLite or PostgreSQL)."),
    ],
    target: Annotated[
        str,
        typer.Option("--to", help="SQLAlchemy URL of the empty store to fill (migrated first)."),
    ],
) -> None:
    """Copy a whole store into an empty one, losslessly: SQLite to PostgreSQL or back."""
    from app.store.copy import CopyError, copy_store

    if make_url(source) == make_url(target):
        typer.echo("error: --from and --to name the same store", err=True)
        raise typer.Exit(2)
    settings = settings_of(ctx)
    engines = [
        open_store(settings.model_copy(update={"database_url": url})) for url in (source, target)
    ]
    try:
        report = copy_store(engines[0], engines[1])
    except CopyError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    copied = ", ".join(f"{table} {rows}" for table, rows in report.rows.items())
    typer.echo(f"copied {copied}")


def run_import(settings: Settings, paths: list[Path], partial: bool) -> records.ImportReport:
    """Import record files and print what happened; shared by `import` and `serve`."""
    engine = open_store(settings)
    with unit_of_work(engine) as session:
        report = records.import_paths(session, paths, partial=partial)
    for skipped in report.skipped:
        typer.echo(f"skipped {skipped}", err=True)
    for rejection in report.rejected:
        typer.echo(f"rejected {rejection}", err=True)
    counts = report.counts
    typer.echo(
        f"created {counts.created}, updated {counts.updated}, unchanged {counts.unchanged}, "
        f"rejected {len(report.rejected)}"
        + ("" if report.written else " -- nothing imported (all-or-nothing; see --partial)")
    )
    return report


def import_command(
    ctx: typer.Context,
    paths: Annotated[
        list[Path], typer.Argument(help="Record files (.json, .jsonl) or folders of them.")
    ],
    partial: Annotated[
        bool, typer.Option("--partial", help="Import the valid records even if some are rejected.")
    ] = False,
) -> None:
    """Validate and upsert records by id; all-or-nothing unless --partial."""
    report = run_import(settings_of(ctx), paths, partial)
    if report.rejected:
        raise typer.Exit(1)


@with_filter_options
def export_command(
    ctx: typer.Context,
    filters: RecordFilters,
    out: Annotated[
        Path | None, typer.Option(help="File to write (JSON Lines); standard output if omitted.")
    ] = None,
) -> None:
    """Write every record passing the filters (the API's: --repo, --review-state...) as JSON
    Lines, in a stable key and record order."""
    engine = open_store(settings_of(ctx))
    with Session(engine) as session:
        lines = records.export_lines(session, filters)
        if out is None:
            sys.stdout.writelines(lines)
            return
        temporary = out.with_name(out.name + ".tmp")
        with temporary.open("w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(lines)
        temporary.replace(out)
