"""`errkb serve --workers N`: N worker processes on one store answer as one server
(the entry point builds the settings and hands them to each worker, never through a global),
each logging uvicorn's access line of every request."""

import ipaddress
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from app.config import PROJECT_ROOT
from tests.helpers.servers import SERVER_START_S, free_port, stop, wait_until_ready

ERRKB = str(Path(sys.executable).with_name("errkb"))
LINE = "RuntimeError: Attempted to free more buffers than allocated"
ACCESS_LINE = re.compile(r'INFO: +127\.0\.0\.1:\d+ - "POST /api/match HTTP/1\.1" 200 OK\n')


def _serve(tmp_path: Path, workers: int, **settings: str) -> tuple[subprocess.Popen, str, Path]:
    """`errkb serve --workers N` over a store in tmp_path with these settings, once /readyz
    answers: the process (the caller stops it), its base URL and its log."""
    port = free_port()
    env = os.environ | {
        "ERRKB_DATABASE_URL": f"sqlite:///{tmp_path / 'errkb.db'}",
        "ERRKB_CACHE_DIR": str(tmp_path / "cache"),
        **settings,
    }
    log = tmp_path / "serve.log"
    command = [ERRKB, "serve", "--no-harvest", "--port", str(port), "--workers", str(workers)]
    with log.open("w") as output:
        server = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        wait_until_ready(server, f"{base}/readyz", deadline, lambda: log.read_text()[-3000:])
    except BaseException:
        stop(server)
        raise
    return server, base, log


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_answers_from_every_worker_and_logs_each_request(
    tmp_path: Path, workers: int
) -> None:
    server, base, log = _serve(tmp_path, workers)
    try:
        deadline = time.monotonic() + SERVER_START_S
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


FORWARDED_LINE = re.compile(r'INFO: +(\S+):\d+ - "POST /api/match HTTP/1\.1" (\d+)')
PASTE = "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 100 + LINE


def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_paste_budget(
    tmp_path: Path,
) -> None:
    """The proxy (here 127.0.0.1) named in ERRKB_FORWARDED_ALLOW_IPS: a client is known by
    the address it forwards, in the access log and in the paste budget."""
    budget = 2 * len(PASTE)
    server, base, log = _serve(
        tmp_path, 1, ERRKB_FORWARDED_ALLOW_IPS="127.0.0.1", ERRKB_PASTE_BUDGET_BYTES=str(budget)
    )
    try:
        for client, expected in (("203.0.113.7", [200, 200, 429]), ("203.0.113.8", [200])):
            forwarded = {"x-forwarded-for": client, "content-type": "text/plain"}
            got = [
                httpx.post(f"{base}/api/match", content=PASTE, headers=forwarded).status_code
                for _ in expected
            ]
            assert got == expected, client
    finally:
        stop(server)
    logged = FORWARDED_LINE.findall(log.read_text())
    assert [address for address, _ in logged] == ["203.0.113.7"] * 3 + ["203.0.113.8"]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_forwarded_address_from_an_untrusted_peer_is_not_believed(
    tmp_path: Path, workers: int
) -> None:
    """ERRKB_FORWARDED_ALLOW_IPS names another proxy: a client connecting directly cannot
    claim an address (and a budget) of its choice, with one worker or several."""
    server, base, log = _serve(tmp_path, workers, ERRKB_FORWARDED_ALLOW_IPS="192.0.2.1")
    try:
        forwarded = {"x-forwarded-for": "203.0.113.7"}
        assert httpx.post(f"{base}/api/match", json={"text": LINE}, headers=forwarded).is_success
    finally:
        stop(server)
    assert [address for address, _ in FORWARDED_LINE.findall(log.read_text())] == ["127.0.0.1"]


def test_compose_trusts_the_proxy_alone_at_its_fixed_address() -> None:
    """compose.yaml: each replica believes X-Forwarded-For from Caddy's address only, which
    is fixed in the network's range, and no replica can be reached but through Caddy."""
    compose = yaml.safe_load((PROJECT_ROOT / "compose.yaml").read_text())
    proxy = compose["services"]["proxy"]
    address = ipaddress.ip_address(proxy["networks"]["default"]["ipv4_address"])
    subnet = compose["networks"]["default"]["ipam"]["config"][0]["subnet"]
    assert address in ipaddress.ip_network(subnet)
    replicas = [name for name in compose["services"] if name.startswith("errkb-")]
    assert len(replicas) == 2
    for name in replicas:
        replica = compose["services"][name]
        assert replica["environment"]["ERRKB_FORWARDED_ALLOW_IPS"] == str(address)
        assert "ports" not in replica
    caddyfile = (PROJECT_ROOT / "deploy" / "Caddyfile").read_text()
    assert "trusted_proxies" not in caddyfile  # Caddy believes no incoming X-Forwarded-For
