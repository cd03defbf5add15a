"""Runs made elsewhere: the run file written and read back, imported once beside their
records, refused whole with the line named, shown in one sentence; and the runs shipped in
data/runs/, imported by `errkb serve`, on the seed pages."""

import json
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, select
from typer.testing import CliRunner

from app.cli.commands import app as cli
from app.config import PROJECT_ROOT, Settings
from app.reproducers import runs
from app.reproducers.runner import RunOutcome, latest_runs
from app.store.engine import open_store, unit_of_work
from app.store.tables import GeneratedReproducer, ReproducerRun
from tests.helpers.records import DATA_DIR, SEED_002, SEED_FILES

SHIPPED = PROJECT_ROOT / "data" / "runs"
H200 = SHIPPED / "2026-12-04-nvidia-h200.jsonl"
GPU = {
    "kind": "gpu",
    "name": "NVIDIA H200",
    "memoryMiB": 143771,
    "driver": "580.159.04",
    "computeCapability": "9.0",
}


def _outcome(record_id: str = SEED_002, device: str = "cuda", status: str = "passed") -> RunOutcome:
    machine = GPU if device == "cuda" else {"kind": "cpu", "name": "Some CPU", "cores": 2}
    result = {
        "id": record_id,
        "target": {"package": "sglang", "version": "0.5.23", "module": "m", "classes": []},
        "device": device,
        "python": "3.12.3",
        "torch": "2.11.0+cu130",
        "cuda": "13.0",
        "machine": machine,
        "trigger": {"status": status},
        "fix": {"status": "passed"},
        "status": status,
    }
    return RunOutcome(
        record_id=record_id,
        device=device,
        status=status,
        reason="the trigger raised the record's error and the fix held",
        duration_s=8.0,
        output_tail="...",
        result=result,
        started_at=datetime(2026, 12, 4, 10, 30, tzinfo=UTC),
    )


def _import(settings: Settings, *paths: Path) -> runs.RunImport:
    with unit_of_work(open_store(settings)) as session:
        return runs.import_runs(session, list(paths))


def _stored(line: dict) -> ReproducerRun:
    return runs._stored_run(runs.RunLine.model_validate(line), "key", "file")


@pytest.fixture
def seeded(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(*SEED_FILES)


@pytest.mark.usefixtures("seeded")
def test_a_run_file_round_trips_and_is_imported_once(settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    assert runs.write_runs(path, [_outcome(), _outcome(device="cpu")], "a" * 40) == 2
    lines, refused = runs.read_runs([path])
    assert refused == []
    assert [line.device for _, line in lines] == ["cuda", "cpu"]
    gpu_machine = lines[0][1].machine
    assert gpu_machine is not None
    assert gpu_machine.name == "NVIDIA H200"

    first = _import(settings, path)
    again = _import(settings, tmp_path)  # the folder: its .jsonl files
    assert (first.added, first.known) == (2, 0)
    assert (again.added, again.known) == (0, 2)
    with Session(open_store(settings)) as session:
        by_device = {run.device: run for run in latest_runs(session, SEED_002)}
    gpu, cpu = by_device["cuda"], by_device["cpu"]
    assert gpu.machine == "NVIDIA H200, 143,771 MiB, driver 580.159.04, compute capability 9.0"
    assert gpu.cuda == "13.0"
    assert gpu.origin == "out.jsonl"
    assert (gpu.package, gpu.version, gpu.trigger_status) == ("sglang", "0.5.23", "passed")
    assert cpu.machine == "CPU: Some CPU (2 cores)"


def test_a_run_of_a_record_not_held_waits_and_is_kept_later(
    make_client: Callable[..., TestClient], settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "out.jsonl"
    runs.write_runs(path, [_outcome()], None)
    make_client()  # an empty store
    report = _import(settings, path)
    assert (report.added, report.without_record) == (0, [SEED_002])
    make_client(*SEED_FILES)
    assert _import(settings, path).added == 1


@pytest.mark.usefixtures("seeded")
@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("not json", "out.jsonl:line 2: "),
        ('{"id": "edc4df790b100979"}', "out.jsonl:line 2: status: Field required"),
        (
            json.dumps({**runs.run_line(_outcome(), None), "device": "tpu"}),
            "out.jsonl:line 2: device: Input should be 'cpu' or 'cuda'",
        ),
        (
            json.dumps({**runs.run_line(_outcome(), None), "id": "../etc"}),
            "out.jsonl:line 2: id: String should match pattern",
        ),
    ],
)
def test_a_file_with_a_line_that_is_no_run_is_refused_whole(
    settings: Settings, tmp_path: Path, line: str, said: str
) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text(json.dumps(runs.run_line(_outcome(), None)) + "\n" + line + "\n")
    report = _import(settings, path)
    assert report.added == 0
    [refusal] = report.refused
    assert said in refusal
    with Session(open_store(settings)) as session:
        assert session.exec(select(ReproducerRun)).all() == []


def test_a_run_says_where_it_ran_in_one_sentence() -> None:
    assert _stored(runs.run_line(_outcome(), None)).summary == (
        "Reproduced on NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0, Python 3.12.3) on 2026-12-04"
    )
    failed = _stored(runs.run_line(_outcome(device="cpu", status="failed"), None))
    assert failed.summary == ("Failed on CPU (torch 2.11.0+cu130, Python 3.12.3) on 2026-12-04")
    bare = ReproducerRun(
        record_id=SEED_002,
        device="cpu",
        status="passed",
        reason="",
        duration_s=1.0,
        output_tail="",
        started_at=datetime(2026, 12, 1, tzinfo=UTC),
    )
    assert bare.summary == "Reproduced on CPU on 2026-12-01"
    gpu = _stored(runs.run_line(_outcome(), None))
    assert runs.holds_on([gpu, failed, bare]) == ["torch 2.11.0+cu130 on NVIDIA H200"]


def _keys(value: object) -> set[str]:
    """Every key of a JSON value, at any depth."""
    if isinstance(value, dict):
        return set(value) | {key for item in value.values() for key in _keys(item)}
    if isinstance(value, list):
        return {key for item in value for key in _keys(item)}
    return set()


def test_the_shipped_runs_passed_and_a_draft_s_run_brings_its_script() -> None:
    """data/runs/ keeps proof: runs that passed, each of a curated record's reproducer or of
    a generated script it carries, with where it ran and the commit of the code."""
    lines, refused = runs.read_runs([SHIPPED])
    assert refused == []
    curated = [line for _, line in lines if line.generated is None]
    generated = [line for _, line in lines if line.generated is not None]
    assert curated, "data/runs/ ships the runs that verified the curated reproducers"
    assert len({line.record_id for line in generated}) >= 1500
    for line in curated:
        assert (DATA_DIR / f"{line.record_id}.json").is_file(), line.record_id
    for line in curated + generated:
        assert line.status == "passed"
        assert line.machine is not None
        assert line.python
        assert line.commit
        assert (line.result or {}).get("id") == line.record_id
        assert "traceback" not in _keys(line.result)


def test_serve_imports_the_shipped_runs_and_the_seed_page_shows_the_gpu(
    make_client: Callable[..., TestClient], settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `errkb serve` does before it serves: the records of data/, then the runs of
    data/runs/, each once however often it starts."""
    monkeypatch.setattr("uvicorn.run", lambda *_args, **_kwargs: None)
    for _ in range(2):
        done = CliRunner().invoke(
            cli, ["--database-url", settings.database_url, "serve", "--no-harvest"]
        )
        assert done.exit_code == 0, done.output
    lines = [line for _, line in runs.read_runs([SHIPPED])[0]]
    curated = sum(line.generated is None for line in lines)
    # the generated ones wait for the default harvest, which --no-harvest leaves out
    assert (
        f"runs: added 0, already kept {curated}, waiting for their record {len(lines) - curated}"
    ) in done.output
    client = make_client()
    page = client.get(f"/errors/{SEED_002}").text
    assert (
        "Reproduced on NVIDIA H200 (torch 2.11.0+cu130, CUDA 13.0, Python 3.12.3) on 2026-12-04"
        in page
    )
    assert "No reproducer run yet" not in page
    assert "Holds on torch 2.11.0+cu130 on NVIDIA H200." in page
    [run] = client.get(f"/api/errors/{SEED_002}").json()["runs"]
    assert run["machine"].startswith("NVIDIA H200, 143,771 MiB")
    assert run["origin"] == "runs/2026-12-04-nvidia-h200.jsonl"
    assert run["summary"].startswith("Reproduced on NVIDIA H200")


@pytest.mark.usefixtures("seeded")
def test_cli_runs_import_names_the_refused_line_and_keeps_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    def invoke(*args: str) -> object:
        return CliRunner().invoke(cli, ["--database-url", settings.database_url, *args])

    path = tmp_path / "gpu.jsonl"
    path.write_text(H200.read_text() + "{}\n")
    done = invoke("runs", "import", str(path))
    assert done.exit_code == 1
    assert f"{path}:line 5: id: Field required" in done.output
    assert "nothing imported" in done.output
    missing = invoke("runs", "import", str(tmp_path / "no"))
    assert missing.exit_code == 2
    assert "no such file" in missing.output
    kept = invoke("runs", "import", str(H200))
    assert kept.exit_code == 0, kept.output
    assert "runs: added 4, already kept 0" in kept.output


def test_a_run_names_its_commit_and_whether_the_code_that_ran_had_changes(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    assert runs.checkout_commit(tmp_path) is None  # not a checkout
    git("init", "-q")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "harness.py").write_text("A = 1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    clean = runs.checkout_commit(tmp_path)
    assert clean is not None
    assert len(clean) == 40
    (tmp_path / "notes.txt").write_text("not code that runs\n")
    assert runs.checkout_commit(tmp_path) == clean
    (tmp_path / "app" / "harness.py").write_text("A = 2\n")
    assert runs.checkout_commit(tmp_path) == clean + "+changes"


def _generated_outcome(record_id: str) -> tuple[RunOutcome, GeneratedReproducer]:
    outcome = _outcome(record_id, device="cpu")
    assert outcome.result is not None
    outcome.result["trigger"]["traceback"] = "Traceback (most recent call last): ..."
    script = GeneratedReproducer(
        record_id=record_id,
        package="sglang",
        version="0.5.23",
        module="sglang.srt.utils.common",
        trigger_call="f(x=-1)",
        fix_call="f(x=1)",
        direct_state=False,
        script="# a generated script\n",
        generated_at=datetime(2026, 12, 4, tzinfo=UTC),
    )
    return outcome, script


@pytest.mark.usefixtures("seeded")
def test_a_generated_run_brings_its_script_and_a_shipped_file_keeps_what_passed(
    settings: Settings, tmp_path: Path
) -> None:
    """A store that never generated the script gets it with its run; the file shipped in
    data/runs/ keeps the runs that passed, compressed, without their tracebacks."""
    passed, script = _generated_outcome(SEED_002)
    failed, _ = _generated_outcome(SEED_002)
    failed.status, failed.started_at = "failed", datetime(2026, 12, 4, 11, tzinfo=UTC)
    full = tmp_path / "out.jsonl"
    runs.write_runs(full, [passed, failed], None, {SEED_002: script})
    shipped = tmp_path / "shipped" / "generated.jsonl.gz"
    assert runs.keep_passed(full, shipped) == 1
    [(_, line)] = runs.read_runs([shipped.parent])[0]
    assert line.generated is not None
    assert line.generated.trigger_call == "f(x=-1)"
    assert "traceback" not in _keys(line.result)

    assert _import(settings, shipped.parent).added == 1
    with Session(open_store(settings)) as session:
        kept = session.get(GeneratedReproducer, SEED_002)
        assert kept is not None
        assert (kept.script, kept.fix_call) == ("# a generated script\n", "f(x=1)")
    other, changed = _generated_outcome(SEED_002)
    changed.script = "# another script\n"
    other.started_at = datetime(2026, 12, 5, tzinfo=UTC)
    runs.write_runs(tmp_path / "other.jsonl", [other], None, {SEED_002: changed})
    report = _import(settings, tmp_path / "other.jsonl")
    assert (report.added, report.other_script) == (0, 1)  # a run of another script: not kept


def test_a_gzipped_file_that_unpacks_to_nonsense_is_refused_with_its_name(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip at all")
    lines, refused = runs.read_runs([broken])
    assert lines == []
    [said] = refused
    assert said.startswith(f"{broken}:(whole file): cannot read file")
