"""`errkb curate` on a real harvested draft: the file is refused while its prose is TO FILL,
naming each field, file and position, and imports as reviewed once written."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session
from typer.testing import CliRunner

from app.cli.commands import app
from app.config import Settings
from app.curation.scaffold import PROSE_HINTS, PROSE_LIST_HINTS, reproducer_script
from app.records import service as records
from app.records.validation import TO_FILL, field_order, record_errors
from app.reproducers.runner import reproducer_info
from app.store.engine import open_store
from tests.helpers.harvested import NO_SPACE, REF, REPO, UPSTREAM_FILE, release_folder

pytestmark = pytest.mark.network  # downloads from the package index

runner = CliRunner()
PROSE = list(PROSE_HINTS) + list(PROSE_LIST_HINTS)
WRITTEN = {
    "documentation": "The shared-memory ring is full: readers have not consumed what was put.",
    "triggerScenarios": "put() of objects that no reader gets, until the ring has no space.",
    "commonSituations": "A multimodal cache whose reader processes died or fell behind.",
    "solutions": ["Let the readers consume, then call free_unused() before putting again."],
    "exampleFix": "storage.free_unused()\nstorage.put(key, value)",
    "preventionTips": ["Size the ring for the readers' lag."],
}


@pytest.fixture
def curator(tmp_path: Path, monkeypatch) -> Path:
    """The CLI on a fresh store and fresh record and reproducer folders."""
    monkeypatch.setenv("ERRKB_DATABASE_URL", f"sqlite:///{tmp_path / 'curate.db'}")
    monkeypatch.setenv("ERRKB_DATA_DIR", str(tmp_path / "records"))
    monkeypatch.setenv("ERRKB_REPRODUCERS_DIR", str(tmp_path / "reproducers"))
    return tmp_path


def _harvest(tmp_path: Path) -> None:
    folder = release_folder(tmp_path)
    done = runner.invoke(app, ["harvest", str(folder), "--repo", REPO, "--ref", REF])
    assert done.exit_code == 0, done.output


def _stored(record_id: str) -> records.StoredRecord:
    with Session(open_store(Settings())) as session:
        stored = records.get_record(session, record_id)
    assert stored is not None
    return stored


def test_curate_a_real_draft_refused_until_written_then_reviewed(curator: Path) -> None:
    _harvest(curator)
    draft = _stored(NO_SPACE)
    assert draft.review_state == "draft"
    assert draft.record.error_message.startswith("Not enough space in the data buffer")

    done = runner.invoke(app, ["curate", NO_SPACE])
    assert done.exit_code == 0, done.output
    record_file = curator / "records" / f"{NO_SPACE}.json"
    reproducer_file = curator / "reproducers" / f"{NO_SPACE}.py"
    assert f"wrote {record_file}" in done.output
    assert f"wrote {reproducer_file}" in done.output

    text = record_file.read_text()
    written = json.loads(text)
    assert list(written) == list(field_order())
    assert text == json.dumps(written, indent=2, ensure_ascii=False) + "\n"
    kept = ("errorMessage", "messagePattern", "filePath", "lineNumber", "sourceCode", "githubUrl")
    for key in (*kept, "tags", "sourceCodeStart", "sourceCodeEnd", "errorClass", "repo"):
        assert written[key] == draft.record.model_dump()[key], key
    assert written["filePath"] == UPSTREAM_FILE
    assert written["lineNumber"] == 241
    assert "raise MemoryError(" in written["sourceCode"]
    for key in PROSE:
        value = written[key]
        assert (value[0] if isinstance(value, list) else value).startswith(TO_FILL), key
    # the hints start from the code context harvest stored
    assert "it raises when `occupied_size_new > self.data_buffer_size`" in written["documentation"]
    assert "called from " in written["triggerScenarios"]
    # and from its explanation: the trigger in words
    trigger = "raised when `occupied_size_new > self.data_buffer_size`"
    assert trigger in written["triggerScenarios"]

    refused = runner.invoke(app, ["import", str(record_file)])
    assert refused.exit_code == 1
    assert f"rejected {record_file}:(whole file): " in refused.output
    for key in PROSE:
        assert f"{key}: still to fill" in refused.output, key
    assert "nothing imported" in refused.output
    assert _stored(NO_SPACE).review_state == "draft"

    half = written | {"documentation": WRITTEN["documentation"]}
    assert sorted(error.field for error in record_errors(half)) == sorted(PROSE[1:])

    record_file.write_text(json.dumps(written | WRITTEN, indent=2) + "\n")
    imported = runner.invoke(app, ["import", str(record_file)])
    assert imported.exit_code == 0, imported.output
    assert "updated 1" in imported.output
    curated = _stored(NO_SPACE)
    assert curated.review_state == "reviewed"
    assert curated.record.model_dump() == written | WRITTEN


def test_the_reproducer_follows_the_readme_and_targets_the_release(curator: Path) -> None:
    _harvest(curator)
    assert runner.invoke(app, ["curate", NO_SPACE]).exit_code == 0
    script = curator / "reproducers" / f"{NO_SPACE}.py"
    source = script.read_text()
    assert "from app.reproducers.harness import Target, main, require" in source
    assert f'RECORD_ID = "{NO_SPACE}"' in source
    assert "#     raise MemoryError(" in source
    info = reproducer_info(Settings(), NO_SPACE)
    assert info is not None
    assert info.devices == ("cpu",)
    assert info.target == {
        "package": "vllm",
        "version": "0.33.0",
        "module": "vllm.distributed.device_communicators.shm_object_storage",
        "classes": [],
    }
    ruff = Path(sys.executable).parent / "ruff"
    linted = subprocess.run([str(ruff), "check", str(script)], capture_output=True, text=True)
    assert linted.returncode == 0, linted.stdout


def test_sglang_paths_drop_the_python_folder() -> None:
    record = json.loads((Path("data/records/edc4df790b100979.json")).read_text())
    stored = records.StoredRecord.of(
        record["id"], json.dumps(record), "draft", "harvest:sglang==0.5.23", None
    )
    script = reproducer_script(stored)
    assert 'module="sglang.srt.utils.cuda_vmm_transport_utils"' in script
    assert 'package="sglang"' in script
    assert 'version="0.5.23"' in script


def test_curate_refuses_what_it_cannot_or_must_not_write(curator: Path) -> None:
    _harvest(curator)
    unknown = runner.invoke(app, ["curate", "tpl-0123456789abcdef"])
    assert unknown.exit_code == 1
    assert "no record tpl-0123456789abcdef" in unknown.output
    assert runner.invoke(app, ["curate", NO_SPACE]).exit_code == 0
    again = runner.invoke(app, ["curate", NO_SPACE])
    assert again.exit_code == 1
    assert "already there" in again.output
    assert "--force" in again.output
    assert runner.invoke(app, ["curate", NO_SPACE, "--force"]).exit_code == 0
    record_file = curator / "records" / f"{NO_SPACE}.json"
    record_file.write_text(json.dumps(json.loads(record_file.read_text()) | WRITTEN))
    assert runner.invoke(app, ["import", str(record_file)]).exit_code == 0
    reviewed = runner.invoke(app, ["curate", NO_SPACE, "--force"])
    assert reviewed.exit_code == 1
    assert "reviewed already" in reviewed.output
