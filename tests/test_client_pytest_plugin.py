"""`pytest -p errkb` in a real pytest run under a real `errkb serve`: a failing test whose
error a record explains gets an "errkb" section; a run that did not ask gets nothing."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from app.config import PROJECT_ROOT
from tests.helpers.logs import FREE_BUFFERS, FREE_BUFFERS_ID
from tests.helpers.served import client_env

RUN_S = 180
TESTS = f"""
def test_pool():
    raise RuntimeError({FREE_BUFFERS!r})

def test_passes():
    assert True

def test_unknown():
    assert 1 == 2
"""
SECTION = "- errkb -"


def _entry_point() -> tuple[str, str]:
    """pyproject.toml's pytest11 entry point: (name, module)."""
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())
    ((name, module),) = pyproject["project"]["entry-points"]["pytest11"].items()
    return name, module


def _installed(folder: Path) -> Path:
    """A distribution's metadata declaring the entry point as pyproject.toml does: what pip
    writes on install, so pytest finds `errkb` as it will where errkb is installed."""
    name, module = _entry_point()
    info = folder / "site" / "errkb_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: errkb-entry\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{name} = {module}\n")
    return info.parent


def _pytest(
    folder: Path, *args: str, installed: bool = True, **settings: str
) -> subprocess.CompletedProcess[str]:
    folder.mkdir(exist_ok=True)
    (folder / "test_job.py").write_text(TESTS)
    env = client_env(**settings)
    if installed:
        env["PYTHONPATH"] = f"{_installed(folder)}:{env['PYTHONPATH']}"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_job.py", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
        timeout=RUN_S,
    )


def test_the_entry_point_names_the_plugin_module() -> None:
    assert _entry_point() == ("errkb", "app.client.pytest_plugin")


def test_pytest_p_errkb_adds_the_explanation_to_the_failing_test(
    errkb_server: str, tmp_path: Path
) -> None:
    run = _pytest(tmp_path, "-p", "errkb", ERRKB_SERVER=errkb_server)
    assert run.returncode == 1, run.stdout
    assert "2 failed, 1 passed" in run.stdout
    pool = run.stdout[run.stdout.index("_ test_pool _") : run.stdout.index("_ test_unknown _")]
    section = pool[pool.index(SECTION) :]
    assert section.splitlines()[1:3] == [
        f"errkb: RuntimeError: {FREE_BUFFERS} (vllm-project/vllm)",
        f"  see: {errkb_server}/errors/{FREE_BUFFERS_ID}",
    ]
    assert run.stdout.count(SECTION) == 1  # the assertion matches no record: no section


def test_the_option_and_the_module_name_ask_too(errkb_server: str, tmp_path: Path) -> None:
    run = _pytest(tmp_path / "option", "--errkb", ERRKB_SERVER=errkb_server)
    assert run.stdout.count(SECTION) == 1, run.stdout + run.stderr
    # Not installed (nor auto-loaded from an install): pytest loads the module by its name.
    module = ["-p", "app.client.pytest_plugin"]
    run = _pytest(
        tmp_path / "module",
        *module,
        installed=False,
        ERRKB_SERVER=errkb_server,
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    assert run.stdout.count(SECTION) == 1, run.stdout + run.stderr


def test_a_run_that_does_not_ask_is_left_alone(errkb_server: str, tmp_path: Path) -> None:
    """Installed, the entry point is loaded into every pytest run: it must add nothing."""
    run = _pytest(tmp_path, ERRKB_SERVER=errkb_server)
    assert "2 failed, 1 passed" in run.stdout
    assert re.search(r"^plugins: .*errkb", run.stdout, re.MULTILINE)  # loaded...
    assert SECTION not in run.stdout  # ...and silent
    assert "errkb:" not in run.stdout


def test_no_answer_adds_nothing(tmp_path: Path, silent_server: str) -> None:
    run = _pytest(tmp_path, "-p", "errkb", ERRKB_SERVER=silent_server, ERRKB_HOOK_TIMEOUT_S="0.5")
    assert "2 failed, 1 passed" in run.stdout
    assert SECTION not in run.stdout
