"""The commands that answer about errors, from a server (--server) or the local store: match,
search, show, run, explain."""

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from app.cli.options import settings_of, with_filter_options
from app.config import Settings
from app.records.filters import RecordFilters

if TYPE_CHECKING:  # imported where used: the commands that need neither start faster
    from app.client.explain import Source
    from app.client.http import ClientError


SERVER_OPTION = typer.Option(
    "--server",
    help="URL of an errkb server whose API answers instead of the local store "
    "(default: ERRKB_SERVER).",
)


def _source(settings: Settings, server: str | None) -> "Source":
    """The server named by --server or ERRKB_SERVER, else the local store: both answer in
    the API's JSON, so each command prints the same either way."""
    from app.client.explain import open_source

    if server:
        settings = settings.model_copy(update={"server": server})
    return open_source(settings, settings.server_timeout_s)


def _fail(error: "ClientError") -> NoReturn:
    """One line and a non-zero status: 2 when the request was refused (a 4xx), else 1."""
    typer.echo(f"error: {error}", err=True)
    raise typer.Exit(2 if error.status and 400 <= error.status < 500 else 1)


def _print_json(answer: dict[str, Any]) -> None:
    typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))


def match_command(
    ctx: typer.Context,
    source: Annotated[
        str, typer.Argument(help="File holding the traceback or log; - reads standard input.")
    ] = "-",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    limit: Annotated[int, typer.Option(help="Most matches to show.", min=1, max=100)] = 5,
    server: Annotated[str | None, SERVER_OPTION] = None,
) -> None:
    """Match a pasted traceback or log against the records, like POST /api/match."""
    from app.client.http import ClientError
    from app.client.text import match_lines

    try:
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as error:
        typer.echo(f"error: cannot read {source}: {error.strerror}", err=True)
        raise typer.Exit(2) from None
    text = raw.decode("utf-8", "replace")
    if not text.strip():  # the API answers blank text with no match; here it is a mistake
        typer.echo(f"error: {source} is empty: paste a traceback, a log or an error line", err=True)
        raise typer.Exit(2)
    source_of_answers = _source(settings_of(ctx), server)
    try:
        result = source_of_answers.match(text, limit)
    except ClientError as error:
        _fail(error)
    if as_json:
        _print_json(result)
        return
    headlines = {}
    for match in result["matches"]:
        record_id = match["record"]["id"]
        try:
            explanation = source_of_answers.record(record_id).get("explanation") or {}
        except ClientError:
            continue  # the headline is a courtesy: the match itself was answered
        if explanation.get("headline"):
            headlines[record_id] = explanation["headline"]
    typer.echo("\n".join(match_lines(result, headlines)))


@with_filter_options
def search_command(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Words, or an error line such as 'KeyError: x'.")],
    filters: RecordFilters,
    limit: Annotated[int, typer.Option(help="Most hits to show.", min=1, max=100)] = 10,
    cursor: Annotated[
        str | None, typer.Option(help="Resume where an earlier page ended (its nextCursor).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the page as GET /api/search answers it.")
    ] = False,
    server: Annotated[str | None, SERVER_OPTION] = None,
) -> None:
    """Full-text search of the records, like GET /api/search (the same filters)."""
    from app.client.http import ClientError
    from app.client.text import search_lines

    try:
        page = _source(settings_of(ctx), server).search(query, filters.active(), limit, cursor)
    except ClientError as error:
        _fail(error)
    if as_json:
        _print_json(page)
        return
    typer.echo("\n".join(search_lines(page)))


def show_command(
    ctx: typer.Context,
    record_id: Annotated[str, typer.Argument(help="Id of the record (as in its page's address).")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the record as GET /api/errors/{id} answers it.")
    ] = False,
    server: Annotated[str | None, SERVER_OPTION] = None,
) -> None:
    """Print a record as its page shows it: advice, message, source, releases, solutions,
    related records and reproducer runs."""
    from app.client.http import ClientError
    from app.client.text import record_lines

    answerer = _source(settings_of(ctx), server)
    try:
        document = answerer.record(record_id)
    except ClientError as error:
        _fail(error)
    if as_json:
        _print_json(document)
        return
    typer.echo("\n".join(record_lines(document, answerer.link(document["record"]["id"]))))


def run_command(
    ctx: typer.Context,
    command: Annotated[list[str], typer.Argument(help="The command and its arguments, after --.")],
    server: Annotated[str | None, SERVER_OPTION] = None,
) -> None:
    """Run a command, pass its output through unchanged, and explain on standard error each
    error it prints (once each); exits with the command's status (128+N for signal N)."""
    from app.client.run import run_command as run_explained

    settings = settings_of(ctx)
    sys.stdout.flush()
    status = run_explained(
        command, lambda: _source(settings, server), explain_wait_s=settings.server_timeout_s
    )
    raise typer.Exit(status)


def explain_command(
    ctx: typer.Context,
    log: Annotated[str, typer.Argument(help="Log file to read; - reads standard input.")] = "-",
    output_format: Annotated[
        str, typer.Option("--format", help="text (a terminal) or markdown (a CI job summary).")
    ] = "text",
    server: Annotated[str | None, SERVER_OPTION] = None,
) -> None:
    """Explain each known error of a log once, as `errkb run` would have while it was
    written; markdown is what the CI action adds to the job summary."""
    from app.client.explain import as_markdown, as_text, explain_log
    from app.client.http import ClientError

    if output_format not in ("text", "markdown"):
        raise typer.BadParameter("must be text or markdown", param_hint="--format")
    try:
        raw = sys.stdin.buffer.read() if log == "-" else Path(log).read_bytes()
    except OSError as error:
        typer.echo(f"error: cannot read {log}: {error.strerror}", err=True)
        raise typer.Exit(2) from None
    try:
        found = explain_log(_source(settings_of(ctx), server), raw.decode("utf-8", "replace"))
    except ClientError as error:
        _fail(error)
    if output_format == "markdown":
        typer.echo(as_markdown(found, "standard input" if log == "-" else Path(log).name), nl=False)
    else:
        typer.echo("".join(as_text(explanation) for explanation in found), nl=False)
