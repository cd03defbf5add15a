"""The errkb command: db upgrade, import (all-or-nothing, --partial), export round trip."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.commands import app
from app.matching.score_weights import RANKING_VERSION
from tests.helpers.records import DATA_DIR, curated_records

runner = CliRunner()


@pytest.fixture
def database(tmp_path: Path, monkeypatch) -> str:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    monkeypatch.setenv("ERRKB_DATABASE_URL", url)
    return url


@pytest.mark.usefixtures("database")
def test_db_upgrade() -> None:
    result = runner.invoke(app, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert "at head" in result.output


@pytest.mark.usefixtures("database")
def test_import_prints_counts_and_is_idempotent() -> None:
    first = runner.invoke(app, ["import", str(DATA_DIR)])
    assert first.exit_code == 0, first.output
    curated = len(curated_records())
    assert f"created {curated}, updated 0, unchanged 0, rejected 0" in first.output
    second = runner.invoke(app, ["import", str(DATA_DIR)])
    assert f"created 0, updated 0, unchanged {curated}, rejected 0" in second.output


@pytest.mark.usefixtures("database")
def test_import_reports_the_broken_file_and_imports_nothing(tmp_path) -> None:
    broken = tmp_path / "broken.jsonl"
    good = json.loads((DATA_DIR / "c53f6de81577a6bc.json").read_text())
    broken.write_text(json.dumps(good) + "\n" + json.dumps(good | {"id": "bad"}) + "\n")
    result = runner.invoke(app, ["import", str(broken)])
    assert result.exit_code == 1
    assert f"{broken}:line 2: id:" in result.output
    assert "nothing imported" in result.output
    partial = runner.invoke(app, ["import", "--partial", str(broken)])
    assert partial.exit_code == 1
    assert "created 1" in partial.output


@pytest.mark.usefixtures("database")
def test_absurd_files_are_named_not_tracebacks(tmp_path) -> None:
    """Deep nesting and a 5,000-digit number: a message with the file and position, and
    --partial still imports the good files."""
    folder = tmp_path / "records"
    folder.mkdir()
    good = json.loads((DATA_DIR / "c53f6de81577a6bc.json").read_text())
    (folder / "a_good.json").write_text(json.dumps(good))
    nested = folder / "b_nested.json"
    nested.write_text("[" * 5000 + "]" * 5000)
    digits = folder / "c_digits.jsonl"
    digits.write_text(json.dumps(good | {"id": "00000000000000ab"}) + "\n")
    digits.write_text(digits.read_text() + '{"lineNumber": ' + "9" * 5000 + "}\n")
    result = runner.invoke(app, ["import", str(folder)])
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)  # a message, not an uncaught error
    assert f"{nested}:(whole file): invalid JSON: arrays or objects nested deeper" in result.output
    assert f"{digits}:line 2: invalid JSON: a number has more than 4300 digits" in result.output
    partial = runner.invoke(app, ["import", "--partial", str(folder)])
    assert "created 2" in partial.output
    assert "rejected 2" in partial.output


@pytest.mark.usefixtures("database")
def test_importing_data_skips_the_schema_and_says_so() -> None:
    result = runner.invoke(app, ["import", str(DATA_DIR.parent)])
    assert result.exit_code == 0, result.output
    assert "skipped" in result.output
    assert "record.schema.json" in result.output
    curated = len(curated_records())
    assert f"created {curated}, updated 0, unchanged 0, rejected 0" in result.output


@pytest.mark.usefixtures("database")
def test_missing_path_is_reported(tmp_path) -> None:
    result = runner.invoke(app, ["import", str(tmp_path / "nope.json")])
    assert result.exit_code == 1
    assert "no such file" in result.output


@pytest.mark.usefixtures("database")
def test_export_round_trip(tmp_path, monkeypatch) -> None:
    runner.invoke(app, ["import", str(DATA_DIR)])
    first = tmp_path / "first.jsonl"
    assert runner.invoke(app, ["export", "--out", str(first)]).exit_code == 0
    monkeypatch.setenv("ERRKB_DATABASE_URL", f"sqlite:///{tmp_path / 'empty.db'}")
    curated = len(curated_records())
    assert f"created {curated}" in runner.invoke(app, ["import", str(first)]).output
    second = tmp_path / "second.jsonl"
    runner.invoke(app, ["export", "--out", str(second)])
    assert first.read_bytes() == second.read_bytes()
    assert len(first.read_text().splitlines()) == curated


def test_export_takes_the_api_filters(database) -> None:
    runner.invoke(app, ["import", str(DATA_DIR)])
    exported = runner.invoke(app, ["export", "--repo", "vllm-project/vllm"])
    assert exported.exit_code == 0, exported.output
    ids = [json.loads(line)["id"] for line in exported.output.splitlines()]
    listed = _api(database).get("/api/errors", params={"repo": "vllm-project/vllm"}).json()
    assert ids == [item["id"] for item in listed["items"]]
    assert ids
    assert runner.invoke(app, ["export", "--repo", "no/such-repo"]).output == ""
    refused = runner.invoke(app, ["export", "--modified-since", "yesterday"])
    assert refused.exit_code == 2
    assert "--modified-since" in refused.output


def test_every_option_has_help() -> None:
    for command in (["import"], ["export"], ["serve"], ["db", "upgrade"]):
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0
    serve_help = runner.invoke(app, ["serve", "--help"]).output
    for option in ("--host", "--port", "--workers"):
        assert option in serve_help


@pytest.mark.usefixtures("database")
def test_search_and_match_commands(tmp_path) -> None:
    runner.invoke(app, ["import", str(DATA_DIR)])
    found = runner.invoke(app, ["search", "ring buffer"])
    assert found.exit_code == 0, found.output
    assert "b6bab2e17ae18394" in found.output
    line = "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096"
    matched = runner.invoke(app, ["match", "-", "--json"], input=line)
    assert matched.exit_code == 0, matched.output
    body = json.loads(matched.output)
    assert body["matches"][0]["captures"] == {"control_offset": "4096"}
    assert body["rankingVersion"] == RANKING_VERSION
    top = body["matches"][0]
    assert round(sum(part["points"] for part in top["components"]), 2) == top["score"]
    paste = tmp_path / "paste.log"
    paste.write_text(line)
    table = runner.invoke(app, ["match", str(paste)])
    assert "edc4df790b100979" in table.output
    assert "control_offset=4096" in table.output
    missing = runner.invoke(app, ["match", str(tmp_path / "nope.log")])
    assert missing.exit_code == 2
    assert "cannot read" in missing.output
    empty = runner.invoke(app, ["match", "-"], input="   ")
    assert empty.exit_code == 2
    assert "paste" in empty.output


ERROR_LINE = "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096"


def _api(database: str):
    """A client of the API on the CLI's store."""
    from fastapi.testclient import TestClient

    from app.config import Settings
    from app.main import create_app

    return TestClient(create_app(Settings(database_url=database)))


@pytest.mark.parametrize(
    ("arguments", "params"),
    [
        (["free"], {"q": "free", "limit": 10}),
        (
            ["free", "--limit", "2", "--tag", "double-free"],
            {"q": "free", "limit": 2, "tag": "double-free"},
        ),
        (
            ["memory", "--severity", "error", "--review-state", "reviewed"],
            {"q": "memory", "limit": 10, "severity": "error", "reviewState": "reviewed"},
        ),
        (["", "--repo", "vllm-project/vllm"], {"q": "", "limit": 10, "repo": "vllm-project/vllm"}),
        ([ERROR_LINE], {"q": ERROR_LINE, "limit": 10}),
    ],
)
def test_search_json_is_the_api_page(database, arguments, params) -> None:
    runner.invoke(app, ["import", str(DATA_DIR)])
    printed = runner.invoke(app, ["search", *arguments, "--json"])
    assert printed.exit_code == 0, printed.output
    answered = _api(database).get("/api/search", params=params)
    assert answered.status_code == 200
    assert json.loads(printed.output) == answered.json()


def test_search_json_pages_with_the_api_cursor(database) -> None:
    runner.invoke(app, ["import", str(DATA_DIR)])
    first = json.loads(runner.invoke(app, ["search", "free", "--limit", "1", "--json"]).output)
    cursor = first["nextCursor"]
    printed = runner.invoke(app, ["search", "free", "--limit", "1", "--cursor", cursor, "--json"])
    answered = _api(database).get("/api/search", params={"q": "free", "limit": 1, "cursor": cursor})
    assert json.loads(printed.output) == answered.json()


def test_match_json_is_the_api_result(database) -> None:
    runner.invoke(app, ["import", str(DATA_DIR)])
    paste = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n' + (
        "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096\n"
    )
    printed = runner.invoke(app, ["match", "-", "--json", "--limit", "3"], input=paste)
    assert printed.exit_code == 0, printed.output
    answered = _api(database).post("/api/match", params={"limit": 3}, content=paste)
    assert answered.status_code == 200
    assert json.loads(printed.output) == answered.json()


def test_every_record_filter_is_an_option_of_search() -> None:
    from app.records.filters import RecordFilters

    shown = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).output
    for name, field in RecordFilters.model_fields.items():
        assert f"--{name.replace('_', '-')}" in shown
        assert field.description.split(" (")[0] in shown


@pytest.mark.usefixtures("database")
def test_a_bad_filter_names_its_option() -> None:
    runner.invoke(app, ["import", str(DATA_DIR)])
    result = runner.invoke(app, ["search", "free", "--modified-since", "yesterday"])
    assert result.exit_code == 2
    assert "--modified-since" in result.output
