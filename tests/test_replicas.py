"""Two `errkb serve` processes on one store behave as one service: the default
harvest runs once, a write through one is matched and found by the other within seconds,
and health says when a replica's index is behind. Real processes on free local ports; on
SQLite they share one file (workers of one machine), on PostgreSQL one schema (replicas)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.helpers.records import make_record
from tests.helpers.servers import ADMIN_TOKEN

START_WITHIN_S = 120.0
FOLLOW_WITHIN_S = 10.0
POLL_S = 0.2
ERRKB = str(Path(sys.executable).with_name("errkb"))
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@dataclass
class Replica:
    process: subprocess.Popen
    client: httpx.Client
    log: Path

    def harvests(self) -> list[dict]:
        """The harvest lines of its JSON log."""
        lines = self.log.read_text().splitlines()
        entries = [json.loads(line) for line in lines if line.startswith("{")]
        return [entry for entry in entries if entry.get("message", "").startswith("harvested ")]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _until(check: Callable[[], bool], within_s: float, what: str) -> float:
    """Wait until `check()` holds; the seconds it took."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < within_s, f"not within {within_s} s: {what}"
        time.sleep(0.1)
    return time.monotonic() - started


@pytest.fixture
def replicas(database_url: str, tmp_path: Path) -> Iterator[list[Replica]]:
    """Two servers on the test's store, each with a cache of its own (as on two machines),
    harvesting the installed typer as their default release and no older release."""
    started = []
    for number in (1, 2):
        port = _free_port()
        env = os.environ | {
            "ERRKB_DATABASE_URL": database_url,
            "ERRKB_CACHE_DIR": str(tmp_path / f"cache-{number}"),
            "ERRKB_ADMIN_TOKEN": ADMIN_TOKEN,
            "ERRKB_DEFAULT_RELEASES": '["typer"]',
            "ERRKB_OLDER_RELEASES": "[]",  # no background harvest of older vLLM releases
            "ERRKB_INDEX_POLL_S": str(POLL_S),
            "ERRKB_LOG_FORMAT": "json",
        }
        log = tmp_path / f"replica-{number}.log"
        command = [ERRKB, "serve", "--port", str(port), "--harvest"]
        with log.open("w") as output:
            process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0)
        started.append(Replica(process, client, log))
    try:
        for replica in started:
            _until(lambda r=replica: _ready(r), START_WITHIN_S, f"{replica.log.name} ready")
        yield started
    finally:
        for replica in started:
            replica.client.close()
            replica.process.send_signal(signal.SIGTERM)
        for replica in started:
            try:
                replica.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait()


def _ready(replica: Replica) -> bool:
    assert replica.process.poll() is None, replica.log.read_text()[-3000:]
    try:
        return replica.client.get("/readyz").status_code == 200
    except httpx.TransportError:
        return False


def _matched(replica: Replica, text: str) -> list[str]:
    response = replica.client.post("/api/match", json={"text": text})
    assert response.status_code == 200, response.text
    return [match["id"] for match in response.json()["matches"]]


def test_two_servers_on_one_store_are_one_service(replicas: list[Replica]) -> None:
    first, second = replicas
    assert len(first.harvests() + second.harvests()) == 1  # the other found it done
    typer_drafts = {"repo": "fastapi/typer", "limit": 1}
    assert first.client.get("/api/errors", params=typer_drafts).json()["total"] > 10

    record = make_record(0xFEED, "Wombat burrow collapsed under load 17")
    error_line = "MemoryError: Wombat burrow collapsed under load 17"
    assert _matched(second, error_line) == []
    created = first.client.post("/api/errors", json=record, headers=AUTH)
    assert created.status_code == 201, created.text
    version = created.json()["datasetVersion"]

    # The other replica's follower takes the write in; search reads the store directly.
    # /healthz answers from memory: the other replica's follower has read the new version
    # and taken the write in
    took = _until(
        lambda: second.client.get("/healthz").json()["index"]["version"] == version, 5, "sync"
    )
    assert took < FOLLOW_WITHIN_S
    index = second.client.get("/healthz").json()["index"]
    assert index == {"version": version, "datasetVersion": version, "stale": False, "behindS": 0}
    assert _matched(second, error_line) == [record["id"]]
    found = second.client.get("/api/search", params={"q": "wombat burrow"}).json()
    assert [item["record"]["id"] for item in found["items"]] == [record["id"]]

    deleted = second.client.delete(f"/api/errors/{record['id']}", headers=AUTH)
    assert deleted.status_code == 204
    _until(lambda: _matched(first, error_line) == [], FOLLOW_WITHIN_S, "delete followed")
    assert second.client.get("/readyz").json()["status"] == "ready"
