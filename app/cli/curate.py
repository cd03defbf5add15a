"""`errkb curate`: a record file and a reproducer to fill in, from a draft."""

from typing import Annotated

import typer
from sqlmodel import Session

from app.cli.options import settings_of
from app.store.engine import open_store


def curate_command(
    ctx: typer.Context,
    record_id: Annotated[str, typer.Argument(help="Id of the draft to explain (see /curate).")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the record file and reproducer.")
    ] = False,
) -> None:
    """Write data/records/ID.json and reproducers/ID.py from a draft, prose marked TO FILL."""
    from app.curation.scaffold import CurateError, curate

    settings = settings_of(ctx)
    with Session(open_store(settings)) as session:
        try:
            scaffold = curate(session, settings, record_id, force)
        except CurateError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(1) from None
    typer.echo(f"wrote {scaffold.record_file}\nwrote {scaffold.reproducer_file}")
    typer.echo(
        "next: write every field marked TO FILL, then `errkb import "
        f"{scaffold.record_file}` (it stays refused until they are written)"
    )
