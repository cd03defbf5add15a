"""`errkb match|search|show --server URL`: a real `errkb serve` answers, and each command
prints what it prints from the local store; a server that fails gives one line and a
non-zero status."""

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from app.cli.commands import app
from app.matching.service import DEADLINE_RETRY_AFTER_S
from tests.helpers import served
from tests.helpers.logs import FREE_BUFFERS_ID, VLLM_LOG, VMM_SLICE, VMM_SLICE_ID
from tests.helpers.records import DATA_DIR

runner = CliRunner()


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A local store holding the records of data/ and the runs of data/runs/, as the server
    (errkb serve) holds them."""
    monkeypatch.setenv("ERRKB_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("ERRKB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ERRKB_SERVER", raising=False)
    assert runner.invoke(app, ["import", str(DATA_DIR)]).exit_code == 0
    assert runner.invoke(app, ["runs", "import", str(DATA_DIR.parent / "runs")]).exit_code == 0
    return str(tmp_path / "cli.db")


@pytest.fixture(scope="module")
def hurried_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real server whose match deadline no match can meet: every match answers 503."""
    folder = tmp_path_factory.mktemp("hurried")
    with served.errkb_serve(folder, ERRKB_MATCH_DEADLINE_S="0.000001") as base:
        yield base


def _both(server: str, *arguments: str, text: str | None = None) -> tuple[str, str]:
    """What the command prints from the local store and from the server."""
    printed = []
    for extra in ([], ["--server", server]):
        result = runner.invoke(app, [*arguments, *extra], input=text)
        assert result.exit_code == 0, result.output
        printed.append(result.stdout)
    return printed[0], printed[1]


@pytest.mark.usefixtures("local")
def test_match_prints_the_same_from_the_server(errkb_server: str) -> None:
    for text in (VLLM_LOG, f"RuntimeError: {VMM_SLICE}"):
        local, remote = _both(errkb_server, "match", "-", text=text)
        assert local == remote
        assert VMM_SLICE_ID in remote or FREE_BUFFERS_ID in remote
        local, remote = _both(errkb_server, "match", "-", "--json", text=text)
        assert json.loads(local) == json.loads(remote)


@pytest.mark.usefixtures("local")
def test_search_prints_the_same_from_the_server(errkb_server: str) -> None:
    local, remote = _both(errkb_server, "search", "free", "--tag", "double-free", "--limit", "2")
    assert local == remote
    assert FREE_BUFFERS_ID in remote
    local, remote = _both(errkb_server, "search", "buffer", "--json")
    answered = httpx.get(f"{errkb_server}/api/search", params={"q": "buffer", "limit": 10}).json()
    assert json.loads(remote) == answered
    assert {**json.loads(local), "datasetVersion": None} == {**answered, "datasetVersion": None}


@pytest.mark.usefixtures("local")
def test_show_prints_the_record_page_from_either(errkb_server: str) -> None:
    local, remote = _both(errkb_server, "show", FREE_BUFFERS_ID)
    assert local.replace(f"errkb show {FREE_BUFFERS_ID}", "PAGE") == remote.replace(
        f"{errkb_server}/errors/{FREE_BUFFERS_ID}", "PAGE"
    )
    lines = remote.splitlines()
    assert lines[0] == (
        "What causes “Attempted to free more buffers than allocated” in vllm-project/vllm?"
    )
    assert lines[1].startswith("Audit all free_buffer call sites")  # the page's lede
    for heading in ("Error message", "What it means", "Source", "Solutions", "Reproducer"):
        assert heading in lines
    assert ">   285              raise RuntimeError" in remote  # the raise line, marked
    local, remote = _both(errkb_server, "show", FREE_BUFFERS_ID, "--json")
    answered = httpx.get(f"{errkb_server}/api/errors/{FREE_BUFFERS_ID}").json()
    assert json.loads(remote) == answered
    assert json.loads(local)["record"] == answered["record"]


@pytest.mark.usefixtures("local")
def test_a_missing_record_is_one_line_and_status_2(errkb_server: str) -> None:
    missing = "record 0000000000000000 does not exist"
    local = runner.invoke(app, ["show", "0000000000000000"])
    assert (local.exit_code, local.stderr) == (2, f"error: {missing}\n")
    remote = runner.invoke(app, ["show", "0000000000000000", "--server", errkb_server])
    assert (remote.exit_code, remote.stderr) == (
        2,
        f"error: {errkb_server} answered 404 Not found: {missing}\n",
    )


def test_server_failures_are_one_line_and_a_non_zero_status(
    silent_server: str, hurried_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = runner.invoke(app, ["match", "-", "--server", "http://127.0.0.1:9"], input="x")
    assert (refused.exit_code, refused.stderr) == (
        1,
        "error: cannot reach http://127.0.0.1:9: Connection refused\n",
    )
    monkeypatch.setenv("ERRKB_SERVER", silent_server)  # the setting, not the option
    monkeypatch.setenv("ERRKB_SERVER_TIMEOUT_S", "0.5")
    silent = runner.invoke(app, ["search", "free"])
    assert (silent.exit_code, silent.stderr) == (
        1,
        f"error: {silent_server} did not answer within 0.5 s\n",
    )
    busy = runner.invoke(app, ["match", "-", "--server", hurried_server], input=VLLM_LOG)
    assert busy.exit_code == 1
    assert busy.stderr.startswith(f"error: {hurried_server} answered 503 Match took too long: ")
    assert busy.stderr.endswith(f"; retry after {DEADLINE_RETRY_AFTER_S} s\n")
    assert busy.stderr.count("\n") == 1
    refused_url = runner.invoke(app, ["show", "x", "--server", "ftp://example.com"])
    assert (refused_url.exit_code, refused_url.stderr) == (
        1,
        "error: ftp://example.com is not an http:// or https:// URL\n",
    )
