"""A real errkb server for the benchmarks: uvicorn on 127.0.0.1, started and stopped here."""

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A port nothing listens on, on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running_server(env: dict[str, str]) -> Iterator[str]:
    """Start `uvicorn app.main:create_app` with these ERRKB_* settings; yield its base URL
    once /readyz answers 200 (the match index is loaded: issue 13); stop it afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "app.main:create_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(command, env=os.environ | env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # a request still running holds it (issue 10)
            server.kill()
            server.wait()
