"""The bundle for a GPU machine without network: made from what the reproducers import,
releases merged, within its limit, and run by a bare Python that has torch and nothing of
errkb's; the run file it writes is what `errkb runs import` keeps.

The GPU machine is simulated by a virtual environment without packages whose path holds
only torch and what torch requires (what such a machine brings), running on the CPU: a
reproducer that needs CUDA is skipped there, never an error, and one that runs on either
passes."""

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import Session
from typer.testing import CliRunner

from app.cli.commands import app as cli
from app.config import PROJECT_ROOT, Settings
from app.reproducers import bundle, environments, runner
from app.store.engine import open_store
from tests.helpers.records import DATA_DIR

pytestmark = pytest.mark.network  # downloads releases and wheels from the package index

HF3FS = "c53f6de81577a6bc"  # vLLM, cpu or cuda
VMM = "edc4df790b100979"  # SGLang, cuda
SHM = "b6bab2e17ae18394"  # vLLM, cpu
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bundle.Manifest]:
    """One bundle of two curated reproducers for this machine's Python, made once."""
    folder = tmp_path_factory.mktemp("bundle")
    settings = Settings(database_url=f"sqlite:///{folder / 'store.db'}")
    manifest = bundle.make_bundle(
        settings, None, folder / "out", python=PYTHON, record_ids=[HF3FS, VMM]
    )
    return folder / "out", manifest


def _bare_python(folder: Path) -> tuple[Path, str]:
    """A Python with no package of its own, and a folder that holds torch and what torch
    requires, as a GPU machine has them (links into this environment)."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True
    )
    machine = folder / "machine-site"
    machine.mkdir()
    for name in environments.requirement_closure(environments.MACHINE_BRINGS):
        distribution = importlib.metadata.distribution(name)
        tops = {file.parts[0] for file in distribution.files or [] if file.parts[0] != ".."}
        for top in tops:
            source = Path(str(distribution.locate_file(top)))
            if source.exists() and not (machine / top).exists():
                (machine / top).symlink_to(source)
    return folder / "venv" / "bin" / "python", str(machine)


def test_the_bundle_holds_what_its_reproducers_import_within_the_limit(
    made: tuple[Path, bundle.Manifest],
) -> None:
    folder, manifest = made
    assert sorted(manifest.curated) == sorted([HF3FS, VMM])
    assert manifest.bytes == (folder / "bundle.tar.xz").stat().st_size <= bundle.LIMIT_BYTES
    assert bundle.read_manifest(folder).curated == manifest.curated
    wheels = " ".join(manifest.wheels).lower()
    for needed in ("pydantic_core", "google_re2", "sqlmodel", "typer"):  # the harness's and CLI's
        assert needed in wheels
    for brought in ("torch-", "sympy", "nvidia"):  # what the GPU machine has itself
        assert brought not in wheels
    assert "errkb" not in wheels
    tag = f"cp{PYTHON.replace('.', '')}"
    assert all(tag in wheel or "none" in wheel or "abi3" in wheel for wheel in manifest.wheels)


def test_a_bare_python_runs_the_bundle_and_the_run_file_is_kept(
    made: tuple[Path, bundle.Manifest], tmp_path: Path, settings: Settings
) -> None:
    folder, _ = made
    python, machine_site = _bare_python(tmp_path)
    bare = subprocess.run(
        [str(python), "-c", "import pydantic"], capture_output=True, text=True, check=False
    )
    assert bare.returncode != 0  # nothing of errkb's is there
    out = tmp_path / "runs.jsonl"
    offline = [str(python), "-m", "app.reproducers.offline", str(folder)]
    done = subprocess.run(
        [*offline, "--device", "cpu", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=PROJECT_ROOT,
        env={key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
        | {"PYTHONPATH": machine_site, "PATH": f"{python.parent}:/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    by_id = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert by_id[HF3FS]["status"] == "passed", by_id[HF3FS]["reason"]
    assert by_id[HF3FS]["machine"]["kind"] == "cpu"
    assert by_id[VMM]["status"] == "skipped"  # CUDA only: skipped on the CPU, not an error
    assert by_id[HF3FS]["commit"] == bundle.read_manifest(folder).commit

    open_store(settings)
    CliRunner().invoke(cli, ["--database-url", settings.database_url, "import", str(DATA_DIR)])
    kept = CliRunner().invoke(
        cli, ["--database-url", settings.database_url, "runs", "import", str(out)]
    )
    assert kept.exit_code == 0, kept.output
    with Session(open_store(settings)) as session:
        [run] = runner.latest_runs(session, HF3FS)
    assert run.summary.startswith("Reproduced on CPU (torch 2.13.0")


def test_reproducers_of_one_release_add_to_its_files_in_the_bundle(tmp_path: Path) -> None:
    """Bundling one vLLM reproducer after another keeps the files of both."""
    settings = Settings()
    reports = {}
    for record_id in (HF3FS, SHM):
        info = runner.reproducer_info(settings, record_id)
        assert info is not None
        report, why = bundle.bundle_script(
            info.script, tmp_path, bundle.script_environment(settings)
        )
        assert report is not None, why
        reports[record_id] = report
    release = tmp_path / "cache" / "unpacked" / "vllm-0.33.0" / "vllm" / "distributed"
    assert (release / "kv_transfer/kv_connector/v1/hf3fs/utils/gather_scatter_helper.py").is_file()
    assert (release / "device_communicators/shm_object_storage.py").is_file()
    assert reports[HF3FS]["release"] == "vllm==0.33.0"


def test_a_bundle_over_its_limit_is_refused_with_its_size(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'store.db'}")
    with pytest.raises(ValueError, match=r"MiB unpacked\), over the 0 MiB a GPU machine"):
        bundle.make_bundle(
            settings, None, tmp_path / "out", python=PYTHON, record_ids=[VMM], limit_bytes=10
        )


def test_a_bundle_is_never_made_over_a_folder_that_holds_anything_else(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'store.db'}")
    with pytest.raises(ValueError, match="holds more than a bundle"):
        bundle.make_bundle(settings, None, tmp_path, python=PYTHON, record_ids=[VMM])
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_a_folder_that_is_no_bundle_is_said_so(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app.reproducers.offline", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert f"{tmp_path} is not a bundle (no manifest.json)" in done.stderr
    refused = CliRunner().invoke(cli, ["verify", "--from-bundle", str(tmp_path)])
    assert refused.exit_code == 2
    assert "not a bundle manifest" in refused.output
