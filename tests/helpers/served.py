"""A real `errkb serve` for the client's tests: the command as people run it, on 127.0.0.1,
over a fresh SQLite store that it fills with data/records on start; no harvest."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.config import PROJECT_ROOT
from tests.helpers.servers import free_port, stop, wait_until_ready

START_S = 120.0
ERRKB = [sys.executable, "-c", "from app.cli.commands import main; main()"]
"""The `errkb` command of this checkout (the installed script may point at another one)."""


def client_env(**settings: str) -> dict[str, str]:
    """The environment of a process under test: this checkout first on the path, no server
    named unless given, and the ERRKB_* settings given."""
    env = {key: value for key, value in os.environ.items() if key != "ERRKB_SERVER"}
    path = [str(PROJECT_ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    return env | {"PYTHONPATH": os.pathsep.join(path), "PYTHONUNBUFFERED": "1"} | settings


@contextmanager
def errkb_serve(folder: Path, **settings: str) -> Iterator[str]:
    """Start `errkb serve --no-harvest` over a store in `folder`; yield its base URL once
    /readyz answers 200; stop it afterwards."""
    port = free_port()
    env = client_env(
        ERRKB_DATABASE_URL=f"sqlite:///{folder / 'errkb.db'}",
        ERRKB_CACHE_DIR=str(folder / "cache"),
        ERRKB_OLDER_RELEASES="[]",
        **settings,
    )
    log = folder / "serve.log"
    command = [*ERRKB, "serve", "--no-harvest", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("w") as output:
        server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        wait_until_ready(server, f"{base}/readyz", deadline, lambda: log.read_text()[-3000:])
        yield base
    finally:
        stop(server)


@contextmanager
def silent_server() -> Iterator[str]:
    """A real TCP listener that takes connections and never answers: a server that hangs."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.listen(64)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
