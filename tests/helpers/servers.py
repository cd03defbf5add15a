"""Real servers in tests: a free loopback port, the admin token, how long a start may take,
and uvicorn started over errkb's app with the settings a test gives it."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from app.config import PROJECT_ROOT
from app.ops.protocol import PROTOCOL_PATH

ADMIN_TOKEN = "test-admin-token"
SERVER_START_S = 60.0


def free_port() -> int:
    """A port nothing listens on, on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_ready(
    server: subprocess.Popen, url: str, deadline: float, why: Callable[[], str]
) -> None:
    """Poll `url` until it answers 200; fail, saying `why()`, if the process exits first
    or the deadline (a time.monotonic()) passes."""
    while True:
        assert server.poll() is None, why()
        assert time.monotonic() < deadline, why()
        try:
            if httpx.get(url).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)


def stop(server: subprocess.Popen) -> None:
    """SIGTERM, as a process manager stops a server; killed if it has not exited in 20 s."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@contextmanager
def uvicorn_server(settings_env: dict[str, str], ready_path: str) -> Iterator[str]:
    """uvicorn on 127.0.0.1 at a free port with these ERRKB_* settings; its base URL once
    `ready_path` answers 200; stopped afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    command += ["--http", PROTOCOL_PATH]  # what errkb serve runs
    server = subprocess.Popen(command, env=os.environ | settings_env, cwd=PROJECT_ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        wait_until_ready(
            server, f"{base}{ready_path}", deadline, lambda: "the server did not start"
        )
        yield base
    finally:
        stop(server)
