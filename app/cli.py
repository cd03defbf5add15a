"""The `errkb` command: db, import, export, serve, match, search, show, run, explain, harvest,
verify, drift, curate; each builds its settings once and hands them down."""

import functools
import inspect
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlmodel import Session

from app import store
from app.config import Settings
from app.records import service as records
from app.records.filters import RecordFilters
from app.store.engine import open_store, unit_of_work

if TYPE_CHECKING:  # imported where used: the commands that need neither start faster
    from typer._click._termui_impl import ProgressBar

    from app.client.explain import Source
    from app.client.http import ClientError
    from app.reproducers.runner import RunOutcome
    from app.store.tables import GeneratedReproducer

UVICORN_LOG_CONFIG = Path(__file__).parent / "ops" / "uvicorn-logging.json"
"""A logging config that changes nothing, for workers whose logs are errkb's JSON (uvicorn's
command line has no way to say "no log config")."""

app = typer.Typer(
    help="errkb: error knowledge for ML-serving infrastructure.", no_args_is_help=True
)
db_app = typer.Typer(help="Database maintenance.", no_args_is_help=True)
app.add_typer(db_app, name="db")
runs_app = typer.Typer(help="Reproducer runs made elsewhere.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")


def _settings(ctx: typer.Context) -> Settings:
    """The settings `configure` read for this invocation (the CLI is an entry point)."""
    return ctx.find_root().obj


@app.callback()
def configure(
    ctx: typer.Context,
    database_url: Annotated[
        str | None,
        typer.Option(help="SQLAlchemy URL of the store (overrides ERRKB_DATABASE_URL)."),
    ] = None,
) -> None:
    """Options shared by every command."""
    # Read afresh on each invocation and handed down; the environment is left as it is.
    ctx.obj = Settings(database_url=database_url) if database_url else Settings()


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Apply pending schema migrations."""
    settings = _settings(ctx)
    open_store(settings)
    typer.echo(f"database at head: {settings.database_url}")


@db_app.command("copy")
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
    settings = _settings(ctx)
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


@app.command("import")
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
    report = run_import(_settings(ctx), paths, partial)
    if report.rejected:
        raise typer.Exit(1)


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


@runs_app.command("import")
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
    if not run_runs_import(_settings(ctx), paths):
        raise typer.Exit(1)


@runs_app.command("keep")
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


def with_filter_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give a command one option per record filter (--repo, --error-class, --tag...) and
    hand it the RecordFilters they make, validated as the API validates its query: a filter
    added to app.records.filters reaches the CLI by itself."""
    fields = RecordFilters.model_fields
    flags = {name: "--" + name.replace("_", "-") for name in fields}
    flags |= {field.alias: flags[name] for name, field in fields.items() if field.alias}
    options = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[str | None, typer.Option(flags[name], help=field.description)],
        )
        for name, field in fields.items()
    ]
    signature = inspect.signature(command)
    kept = [param for param in signature.parameters.values() if param.name != "filters"]

    @functools.wraps(command)
    def with_filters(*args: Any, **kwargs: Any) -> None:
        given = {name: kwargs.pop(name) for name in fields}
        try:
            filters = RecordFilters.model_validate(
                {name: value for name, value in given.items() if value is not None}
            )
        except ValidationError as error:
            problem = error.errors()[0]
            hint = flags.get(str(problem["loc"][0]) if problem["loc"] else "", None)
            raise typer.BadParameter(problem["msg"], param_hint=hint) from None
        command(*args, filters=filters, **kwargs)

    with_filters.__signature__ = signature.replace(parameters=[*kept, *options])  # type: ignore[attr-defined]
    return with_filters


@app.command("export")
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
    engine = open_store(_settings(ctx))
    with Session(engine) as session:
        lines = records.export_lines(session, filters)
        if out is None:
            sys.stdout.writelines(lines)
            return
        temporary = out.with_name(out.name + ".tmp")
        with temporary.open("w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(lines)
        temporary.replace(out)


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


@app.command("match")
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
    source_of_answers = _source(_settings(ctx), server)
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


@app.command("search")
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
        page = _source(_settings(ctx), server).search(query, filters.active(), limit, cursor)
    except ClientError as error:
        _fail(error)
    if as_json:
        _print_json(page)
        return
    typer.echo("\n".join(search_lines(page)))


@app.command("show")
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

    answerer = _source(_settings(ctx), server)
    try:
        document = answerer.record(record_id)
    except ClientError as error:
        _fail(error)
    if as_json:
        _print_json(document)
        return
    typer.echo("\n".join(record_lines(document, answerer.link(document["record"]["id"]))))


@app.command(
    "run",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
def run_command(
    ctx: typer.Context,
    command: Annotated[list[str], typer.Argument(help="The command and its arguments, after --.")],
    server: Annotated[str | None, SERVER_OPTION] = None,
) -> None:
    """Run a command, pass its output through unchanged, and explain on standard error each
    error it prints (once each); exits with the command's status (128+N for signal N)."""
    from app.client.run import run_command as run_explained

    settings = _settings(ctx)
    sys.stdout.flush()
    status = run_explained(
        command, lambda: _source(settings, server), explain_wait_s=settings.server_timeout_s
    )
    raise typer.Exit(status)


@app.command("explain")
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
        found = explain_log(_source(_settings(ctx), server), raw.decode("utf-8", "replace"))
    except ClientError as error:
        _fail(error)
    if output_format == "markdown":
        typer.echo(as_markdown(found, "standard input" if log == "-" else Path(log).name), nl=False)
    else:
        typer.echo("".join(as_text(explanation) for explanation in found), nl=False)


@app.command("serve")
def serve_command(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Worker processes.", min=1)] = 1,
    import_data: Annotated[
        bool, typer.Option("--import-data/--no-import-data", help="Import the data folder first.")
    ] = True,
    harvest_defaults: Annotated[
        bool,
        typer.Option(
            "--harvest/--no-harvest",
            help="Harvest the default releases (ERRKB_DEFAULT_RELEASES) not yet in the store.",
        ),
    ] = True,
) -> None:
    """Migrate, import curated records, serve API and pages; harvest the default releases
    and load the match index in the background (/readyz answers 200 once both are done)."""
    import uvicorn

    from app.main import create_app
    from app.ops.logs import TEXT_LOG_CONFIG
    from app.ops.protocol import HeaderTimeoutProtocol

    settings = _settings(ctx).model_copy(update={"harvest_on_start": harvest_defaults})
    if import_data:
        engine = open_store(settings)
        # Replicas starting together import one after the other: the later ones find every
        # record unchanged instead of colliding on the same new ids.
        with store.backend(engine).exclusive(engine, "import"):
            if run_import(settings, [settings.data_dir], partial=False).rejected:
                raise typer.Exit(1)
            if settings.runs_dir.is_dir() and not run_runs_import(settings, [settings.runs_dir]):
                raise typer.Exit(1)
        engine.dispose()  # the app opens its own; no connection is handed to the server
    # JSON logs: uvicorn's loggers go to errkb's JSON handler, and errkb logs each request.
    if workers > 1:
        _serve_workers(settings, host, port, workers)
    logs: dict[str, Any] = {"log_config": str(TEXT_LOG_CONFIG)}
    if settings.log_format == "json":
        logs = {"log_config": None, "access_log": False}
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        http=HeaderTimeoutProtocol,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        **logs,
    )


def _serve_workers(settings: Settings, host: str, port: int, workers: int) -> NoReturn:
    """Several workers: uvicorn starts each in a process of its own, which builds its app from
    the environment (create_app is its entry point); this command's settings reach them in the
    environment of the uvicorn process this one becomes (exec, not a child: a process manager
    that stops this process stops the server, where a child would be left running)."""
    from app.ops.logs import TEXT_LOG_CONFIG
    from app.ops.protocol import PROTOCOL_PATH

    environment = os.environ | {
        "ERRKB_DATABASE_URL": settings.database_url,
        "ERRKB_HARVEST_ON_START": str(settings.harvest_on_start).lower(),
    }
    command = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]
    command += ["--host", host, "--port", str(port), "--workers", str(workers)]
    command += ["--http", PROTOCOL_PATH]  # request headers in time (app.ops.protocol)
    if settings.forwarded_allow_ips is not None:
        command += ["--forwarded-allow-ips", settings.forwarded_allow_ips]
    if settings.log_format == "json":  # errkb's JSON handler takes uvicorn's loggers
        command += ["--no-access-log", "--log-config", str(UVICORN_LOG_CONFIG)]
    else:
        command += ["--log-config", str(TEXT_LOG_CONFIG)]
    sys.stdout.flush()  # what the import printed, before the process is replaced
    sys.stderr.flush()
    os.execve(sys.executable, command, environment)


@app.command("verify")
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
    settings = _settings(ctx)
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


@app.command("drift")
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

    from app.api.schemas import drift_out
    from app.reproducers import drift, runner
    from app.reproducers.generation import verification

    settings = _settings(ctx)
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
            stored_check = drift_out(drift.store_drift(session, outcome))
        outcomes.append(outcome)
        checks.append({"recordId": record_id} | stored_check.model_dump(mode="json", by_alias=True))
    if as_json:  # each check as GET /api/errors/{id}/reproducer shows it in `drift`
        typer.echo(json.dumps(checks, indent=2))
        return
    for o in outcomes:
        line = "-" if o.found_line is None else o.found_line
        typer.echo(f"{o.record_id}  {o.package}=={o.version}  {o.status:<7}  {line}  {o.detail}")


def harvest_releases(
    settings: Settings, specs: list[str], repo: str | None, ref: str | None
) -> None:
    """Harvest each release into the store, with a progress bar and a summary per package."""
    from app.harvest import drafts
    from app.reproducers.upstream import Upstream

    engine = open_store(settings)
    releases = Upstream(settings.cache_dir)
    for spec in specs:
        try:
            release = drafts.resolve_release(spec, repo=repo, ref=ref, releases=releases)
        except drafts.ReleaseError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(2) from None
        with _FileProgress(f"harvesting {spec}") as progress, unit_of_work(engine) as session:
            result, counts = drafts.harvest_release(session, release, progress)
        skipped = ", ".join(f"{reason} {n}" for reason, n in result.skipped.most_common())
        typer.echo(
            f"{spec} ({release.repo}@{release.ref}): {result.files} files, "
            f"{result.raise_sites} raise sites, {result.log_sites} log sites; "
            f"drafts created {counts.created}, "
            f"updated {counts.updated}, unchanged {counts.unchanged}, "
            f"sites of reviewed records {counts.claimed} (absorbed {counts.absorbed}), "
            f"gone {counts.gone}, "
            f"invalid {counts.invalid}; skipped: {skipped or 'none'}"
        )


class _FileProgress:
    """A progress bar fed by harvest's per-file callback (its total is known on the first)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: ProgressBar[int] | None = None

    def __enter__(self) -> "_FileProgress":
        return self

    def __call__(self, _done: int, total: int, _path: str) -> None:
        if self.bar is None:
            self.bar = typer.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(1)

    def __exit__(self, *exc_info: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc_info)


@app.command("harvest")
def harvest_command(
    ctx: typer.Context,
    specs: Annotated[
        list[str],
        typer.Argument(
            help="vllm==0.33.0 (downloaded), an installed distribution (torch), "
            "or a source folder (with --repo and --ref)."
        ),
    ],
    repo: Annotated[
        str | None, typer.Option(help="owner/name on GitHub (required for a source folder).")
    ] = None,
    ref: Annotated[
        str | None, typer.Option(help="Tag or commit the drafts' GitHub links pin.")
    ] = None,
) -> None:
    """Harvest a draft record for every raise site of upstream releases."""
    harvest_releases(_settings(ctx), specs, repo, ref)


@app.command("curate")
def curate_command(
    ctx: typer.Context,
    record_id: Annotated[str, typer.Argument(help="Id of the draft to explain (see /curate).")],
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the record file and reproducer.")
    ] = False,
) -> None:
    """Write data/records/ID.json and reproducers/ID.py from a draft, prose marked TO FILL."""
    from app.curation.scaffold import CurateError, curate

    settings = _settings(ctx)
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


def main() -> None:
    """Console-script entry point."""
    app()
