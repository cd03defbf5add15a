"""The reproducer runner, its stored runs, the reproducer endpoint, and drift."""

import json
import os
from pathlib import Path

import pytest
from sqlmodel import Session

from app.config import PROJECT_ROOT
from app.records import service as records
from app.records.model import ErrorRecord, parse_record
from app.reproducers import drift, runner
from tests.helpers.records import DATA_DIR

pytestmark = pytest.mark.network  # downloads from the package index

HANGING = """
import time
RECORD_ID = "{rid}"
DEVICES = ("cpu",)
time.sleep(60)
"""
LEAKING = """
import json, sys
from multiprocessing import resource_tracker, shared_memory
RECORD_ID = "{rid}"
DEVICES = ("cpu",)
segment = shared_memory.SharedMemory(create=True, size=4096, name="errkb_test_{rid}")
segment.close()
resource_tracker.unregister(segment._name, "shared_memory")  # leak it, as a crash would
print(json.dumps({{"id": "{rid}", "status": "passed", "reason": "ok", "device": "cpu"}}))
"""
REMOVING = """
import json, pathlib, shutil
RECORD_ID = "{rid}"
DEVICES = ("cpu",)
shutil.rmtree(pathlib.Path("").resolve())  # an empty path: where the script runs
print(json.dumps({{"id": "{rid}", "status": "passed", "reason": "ok", "device": "cpu"}}))
"""
CRASHING = """
import os
RECORD_ID = "{rid}"
DEVICES = ("cpu",)
os.abort()
"""


@pytest.fixture
def scripts(tmp_path: Path, settings):
    """A reproducers folder of real misbehaving scripts, and settings pointing at it."""
    folder = tmp_path / "reproducers"
    folder.mkdir()
    for rid, body in (
        ("000000000000000a", HANGING),
        ("000000000000000b", LEAKING),
        ("000000000000000c", CRASHING),
        ("000000000000000d", REMOVING),
    ):
        (folder / f"{rid}.py").write_text(body.format(rid=rid))
    return settings.model_copy(update={"reproducers_dir": folder, "reproducer_timeout_s": 2.0})


def test_declared_target_is_read_without_running(settings) -> None:
    info = runner.reproducer_info(settings, "edc4df790b100979")
    assert info.target["package"] == "sglang"
    assert info.target["version"] == "0.5.23"
    assert "CudaVmmMemoryPool" in info.target["classes"]
    assert info.devices == ("cuda",)
    assert runner.reproducer_info(settings, "../../etc/passwd") is None
    assert [i.record_id for i in runner.all_reproducers(settings)] == sorted(
        p.stem for p in DATA_DIR.glob("*.json")
    )


def test_hanging_reproducer_is_killed_and_reported(scripts) -> None:
    info = runner.reproducer_info(scripts, "000000000000000a")
    outcome = runner.run_reproducer(scripts, info, "cpu")
    assert outcome.status == "error"
    assert "timed out after 2 s" in outcome.reason
    assert outcome.duration_s < 30


def test_crashing_reproducer_is_an_error_not_a_pass(scripts) -> None:
    outcome = runner.run_reproducer(
        scripts, runner.reproducer_info(scripts, "000000000000000c"), "cpu"
    )
    assert outcome.status == "error"
    assert "printed no result" in outcome.reason
    assert runner.exit_status([outcome]) == 1


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm on this system")
def test_leaked_shared_memory_is_removed(scripts) -> None:
    info = runner.reproducer_info(scripts, "000000000000000b")
    outcome = runner.run_reproducer(scripts, info, "cpu")
    assert outcome.status == "passed"
    assert "errkb_test_000000000000000b" in outcome.reason
    assert not Path("/dev/shm/errkb_test_000000000000000b").exists()


def test_a_reproducer_runs_in_a_scratch_folder_not_where_it_was_started(
    scripts, tmp_path, monkeypatch
) -> None:
    started_in = tmp_path / "checkout"
    started_in.mkdir()
    (started_in / "keep.txt").write_text("kept\n")
    monkeypatch.chdir(started_in)
    info = runner.reproducer_info(scripts, "000000000000000d")
    outcome = runner.run_reproducer(scripts, info, "cpu")
    assert outcome.status == "passed", outcome.output_tail
    assert (started_in / "keep.txt").read_text() == "kept\n"


def test_verify_runs_the_real_reproducer_and_stores_it(session: Session, settings) -> None:
    records.import_paths(session, [DATA_DIR])
    session.commit()  # the runner stores each run in a unit of work of its own
    wanted = ["c53f6de81577a6bc", "edc4df790b100979"]
    outcomes = runner.verify(session.get_bind(), settings, wanted, "auto")
    by_id = {o.record_id: o for o in outcomes}
    assert by_id["c53f6de81577a6bc"].status == "passed", by_id["c53f6de81577a6bc"].output_tail
    assert by_id["c53f6de81577a6bc"].check_status("trigger") == "passed"
    assert by_id["c53f6de81577a6bc"].check_status("fix") == "passed"
    cuda = by_id["edc4df790b100979"]
    if cuda.status != "passed":
        assert cuda.status == "skipped"
        assert "CUDA" in cuda.reason
    assert runner.exit_status(outcomes) == 0
    [run] = runner.latest_runs(session, "c53f6de81577a6bc")
    assert (run.package, run.version, run.device) == ("vllm", "0.33.0", "cpu")
    assert run.torch.startswith("2.13.0")
    assert run.python
    assert run.duration_s > 0
    assert json.loads(run.result)["trigger"]["errorClass"] == "RuntimeError"


def test_unknown_reproducer_is_refused(session, settings) -> None:
    with pytest.raises(ValueError, match="no reproducer for 0000000000000000"):
        runner.verify(session.get_bind(), settings, ["0000000000000000"])


def test_reproducer_endpoint_shows_runs_and_drift(make_client, settings) -> None:
    client = make_client(DATA_DIR)
    body = client.get("/api/errors/b6bab2e17ae18394/reproducer").json()
    assert body["script"] == "reproducers/b6bab2e17ae18394.py"
    assert body["target"]["package"] == "vllm"
    assert body["devices"] == ["cpu"]
    assert body["runs"] == []
    assert body["drift"] is None
    with Session(client.app.state.services.engine) as session:
        runner.verify(client.app.state.services.engine, settings, ["b6bab2e17ae18394"])
        outcome = drift.check_drift(settings, records.get_record(session, "b6bab2e17ae18394"))
        drift.store_drift(session, outcome)
        session.commit()
    body = client.get("/api/errors/b6bab2e17ae18394/reproducer").json()
    assert body["runs"][0]["status"] == "passed"
    assert body["runs"][0]["triggerStatus"] == "passed"
    assert body["drift"]["status"] == "moved"
    assert body["drift"]["version"] == "0.33.0"
    document = client.get("/api/errors/b6bab2e17ae18394").json()
    assert document["links"]["reproducer"] == "/api/errors/b6bab2e17ae18394/reproducer"
    assert client.get("/api/errors/0000000000000000/reproducer").status_code == 404


def test_drift_of_the_real_releases(session, settings) -> None:
    records.import_paths(session, [DATA_DIR])
    found = {
        rid: drift.check_drift(settings, records.get_record(session, rid))
        for rid in ("c53f6de81577a6bc", "edc4df790b100979")
    }
    assert found["c53f6de81577a6bc"].status == "moved"
    assert found["c53f6de81577a6bc"].found_line == 259
    assert found["edc4df790b100979"].package == "sglang"
    assert found["edc4df790b100979"].status in {"moved", "same"}


@pytest.fixture
def c53_record() -> ErrorRecord:
    return parse_record((DATA_DIR / "c53f6de81577a6bc.json").read_text())


def _file_around(record: ErrorRecord, before: int) -> str:
    """The record's excerpt placed in a file after `before` filler lines."""
    filler = [f"# filler {n}" for n in range(record.source_code_start - 1 + before)]
    return "\n".join([*filler, record.source_code, "# end"])


def test_locate_same_moved_changed_gone(c53_record) -> None:
    assert drift.locate_raise_site(c53_record, _file_around(c53_record, 0))[:2] == ("same", 285)
    assert drift.locate_raise_site(c53_record, _file_around(c53_record, 7))[:2] == ("moved", 292)
    changed = _file_around(c53_record, 0).replace("self._inuse_count -= len(buffers)", "pass")
    assert drift.locate_raise_site(c53_record, changed)[:2] == ("changed", 285)
    rewritten = _file_around(c53_record, 0).replace(
        'raise RuntimeError("Attempted', 'raise ValueError("Attempted'
    )
    assert drift.locate_raise_site(c53_record, rewritten)[0] == "changed"
    gone = _file_around(c53_record, 0).replace("Attempted to free more buffers", "Freed")
    assert drift.locate_raise_site(c53_record, gone) == (
        "gone",
        None,
        "the raise and its message text are no longer in the file",
    )


def test_cli_verify_json(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from app.cli.commands import app

    monkeypatch.setenv("ERRKB_DATABASE_URL", f"sqlite:///{tmp_path / 'v.db'}")
    cli = CliRunner()
    cli.invoke(app, ["import", str(DATA_DIR)])
    result = cli.invoke(app, ["verify", "c53f6de81577a6bc", "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    [run] = json.loads(result.output)
    assert run["status"] == "passed"
    assert run["result"]["target"]["version"] == "0.33.0"
    assert os.path.exists(PROJECT_ROOT / "reproducers" / "c53f6de81577a6bc.py")


def test_cli_drift_json_is_the_api_drift(tmp_path, monkeypatch) -> None:
    """`errkb drift --json` prints each check as the API shows it."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from app.cli.commands import app
    from app.config import Settings
    from app.main import create_app

    database = f"sqlite:///{tmp_path / 'd.db'}"
    monkeypatch.setenv("ERRKB_DATABASE_URL", database)
    cli = CliRunner()
    cli.invoke(app, ["import", str(DATA_DIR)])
    result = cli.invoke(app, ["drift", "c53f6de81577a6bc", "--json"])
    assert result.exit_code == 0, result.output
    [printed] = json.loads(result.output)
    assert printed.pop("recordId") == "c53f6de81577a6bc"
    client = TestClient(create_app(Settings(database_url=database, settle_heap=False)))
    shown = client.get("/api/errors/c53f6de81577a6bc/reproducer").json()["drift"]
    assert printed == shown
    assert printed["status"] == "moved"
    assert printed["foundLine"] == 259
