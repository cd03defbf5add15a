"""`errkb serve --workers N`: N worker processes on one store answer as one server
(the entry point builds the settings and hands them to each worker, never through a global),
each logging uvicorn's access line of every request."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.servers import SERVER_START_S, free_port, stop, wait_until_ready

ERRKB = str(Path(sys.executable).with_name("errkb"))
LINE = "RuntimeError: Attempted to free more buffers than allocated"
ACCESS_LINE = re.compile(r'INFO: +127\.0\.0\.1:\d+ - "POST /api/match HTTP/1\.1" 200 OK\n')


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_answers_from_every_worker_and_logs_each_request(
    tmp_path: Path, workers: int
) -> None:
    port = free_port()
    env = os.environ | {
        "ERRKB_DATABASE_URL": f"sqlite:///{tmp_path / 'errkb.db'}",
        "ERRKB_CACHE_DIR": str(tmp_path / "cache"),
    }
    log = tmp_path / "serve.log"
    command = [ERRKB, "serve", "--no-harvest", "--port", str(port), "--workers", str(workers)]
    with log.open("w") as output:
        server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        wait_until_ready(server, f"{base}/readyz", deadline, lambda: log.read_text()[-3000:])
        while log.read_text().count("Application startup complete") < workers:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        for _ in range(4):  # whichever worker answers, it has the curated record
            matched = httpx.post(f"{base}/api/match", json={"text": LINE}).json()
            assert matched["matches"][0]["id"] == "c53f6de81577a6bc"
    finally:
        stop(server)
    assert log.read_text().count("Started server process") == workers
    assert len(ACCESS_LINE.findall(log.read_text())) == 4
