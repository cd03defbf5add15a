"""`errkb serve`: migrate, import the data folder, then run the server in one or more workers."""

import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from app import store
from app.cli.options import settings_of
from app.cli.reproducers import run_runs_import
from app.cli.store import run_import
from app.config import Settings
from app.store.engine import open_store

UVICORN_LOG_CONFIG = Path(__file__).parents[1] / "ops" / "uvicorn-logging.json"
"""A logging config that changes nothing, for workers whose logs are errkb's JSON (uvicorn's
command line has no way to say "no log config")."""


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

    settings = settings_of(ctx).model_copy(update={"harvest_on_start": harvest_defaults})
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
