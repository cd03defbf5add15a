"""A real errkb server for the benchmarks: uvicorn on 127.0.0.1, started and stopped here."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class Server:
    """A running server: where it answers, and its process (for its CPU time)."""

    base: str
    port: int
    pid: int


def free_port() -> int:
    """A port nothing listens on, on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(env: dict[str, str], protocol: str | None = None) -> Iterator[str]:
    """Start `uvicorn app.main:create_app` with these ERRKB_* settings (and uvicorn's
    `--http protocol` if given); yield its base URL once /readyz answers 200 (the match
    index is loaded); stop it afterwards."""
    with running_servers(env, 1, protocol) as (server,):
        yield server.base


@contextmanager
def running_servers(
    env: dict[str, str], count: int, protocol: str | None = None
) -> Iterator[list[Server]]:
    """`count` servers of one store (replicas), started together; yielded once
    each answers /readyz with 200; stopped afterwards."""
    started: list[tuple[subprocess.Popen, Server]] = []
    try:
        for _ in range(count):
            port = free_port()
            command = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]
            command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
            command += ["--http", protocol] if protocol else []
            process = subprocess.Popen(command, env=os.environ | env)
            started.append((process, Server(f"http://127.0.0.1:{port}", port, process.pid)))
        deadline = time.monotonic() + START_TIMEOUT_S
        for process, server in started:
            while True:
                try:
                    if httpx.get(f"{server.base}/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the server did not start")
                time.sleep(0.05)
        yield [server for _, server in started]
    finally:
        for process, _ in started:
            process.terminate()
        for process, _ in started:
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:  # a request still running holds it
                process.kill()
                process.wait()
