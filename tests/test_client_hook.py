"""The Python hook in real processes under a real `errkb serve`: the program's traceback
exactly as without the hook, then the explanation; nothing more when nobody answers."""

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.logs import FREE_BUFFERS, FREE_BUFFERS_ID
from tests.helpers.served import client_env

RUN_S = 180
HOOK = [sys.executable, "-m", "app.client.hook"]
EXPLAINED = f"errkb: RuntimeError: {FREE_BUFFERS} (vllm-project/vllm)\n"


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    return script


def _both(script: Path, *args: str, **settings: str) -> tuple[str, str]:
    """The stderr of the script run plainly and run under the hook."""
    plain = subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        env=client_env(**settings),
        timeout=RUN_S,
    )
    hooked = subprocess.run(
        [*HOOK, str(script), *args],
        capture_output=True,
        text=True,
        env=client_env(**settings),
        timeout=RUN_S,
    )
    assert hooked.returncode == plain.returncode
    assert hooked.stdout == plain.stdout
    return plain.stderr, hooked.stderr


CRASH = f"""
import sys
print("args", sys.argv[1:])
raise RuntimeError({FREE_BUFFERS!r})
"""


def test_the_explanation_follows_the_unchanged_traceback(errkb_server: str, tmp_path: Path) -> None:
    plain, hooked = _both(_script(tmp_path, CRASH), "--lr", "3", ERRKB_SERVER=errkb_server)
    assert plain.endswith(f"RuntimeError: {FREE_BUFFERS}\n")
    assert hooked.startswith(plain)
    assert hooked[len(plain) :].splitlines()[:2] == [
        EXPLAINED.strip(),
        f"  see: {errkb_server}/errors/{FREE_BUFFERS_ID}",
    ]


def test_threads_and_child_processes_are_explained_too(errkb_server: str, tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        f"""
        import subprocess, sys, threading
        def fail():
            raise RuntimeError({FREE_BUFFERS!r})
        thread = threading.Thread(target=fail)
        thread.start()
        thread.join()
        subprocess.run([sys.executable, "-c", "raise KeyError('not a known error')"])
        subprocess.run([sys.executable, "-c", "raise RuntimeError({FREE_BUFFERS!r})"])
        """,
    )
    plain, hooked = _both(script, ERRKB_SERVER=errkb_server)
    assert plain.count("Traceback") == 3
    assert hooked.count(EXPLAINED) == 2  # the thread's and the child's; the KeyError: none
    assert [line for line in hooked.splitlines() if not line.startswith(("errkb:", "  "))] == [
        line for line in plain.splitlines() if not line.startswith("  ")
    ]


def test_a_torch_spawn_workers_error_is_explained_by_its_parent(
    errkb_server: str, tmp_path: Path
) -> None:
    pytest.importorskip("torch", reason="torch's spawn is what the hook is tried on")
    script = _script(
        tmp_path,
        f"""
        import torch.multiprocessing as mp

        def worker(rank):
            raise RuntimeError({FREE_BUFFERS!r})

        if __name__ == "__main__":
            mp.spawn(worker, nprocs=1)
        """,
    )
    hooked = subprocess.run(
        [*HOOK, str(script)],
        capture_output=True,
        text=True,
        env=client_env(ERRKB_SERVER=errkb_server),
        timeout=RUN_S,
    )
    assert hooked.returncode == 1
    assert "ProcessRaisedException" in hooked.stderr
    assert hooked.stderr.count(EXPLAINED) == 1
    assert hooked.stderr.index("ProcessRaisedException") < hooked.stderr.index(EXPLAINED)


def test_importing_the_hook_installs_it(errkb_server: str, tmp_path: Path) -> None:
    script = _script(tmp_path, "import app.client.hook\n" + CRASH)
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=client_env(ERRKB_SERVER=errkb_server),
        timeout=RUN_S,
    )
    assert run.stderr.count(EXPLAINED) == 1


def test_nothing_is_added_when_no_server_answers(tmp_path: Path, silent_server: str) -> None:
    script = _script(tmp_path, CRASH)
    plain, refused = _both(script, ERRKB_SERVER="http://127.0.0.1:9")
    assert refused == plain
    started = time.monotonic()
    plain, silent = _both(script, ERRKB_SERVER=silent_server, ERRKB_HOOK_TIMEOUT_S="0.5")
    assert silent == plain
    assert time.monotonic() - started < RUN_S


def test_nothing_is_added_without_a_server_or_a_local_store(tmp_path: Path) -> None:
    database = tmp_path / "none.db"
    plain, hooked = _both(_script(tmp_path, CRASH), ERRKB_DATABASE_URL=f"sqlite:///{database}")
    assert hooked == plain
    assert not database.exists()  # the hook creates no store where there was none


def test_the_client_loads_no_server_stack() -> None:
    """The hook and the plugin run inside other programs: importing them (and what they
    use to ask a server) loads neither FastAPI, nor SQLAlchemy, nor the store."""
    code = (
        "import sys, app.client.hook, app.client.pytest_plugin, app.client.explain, "
        "app.client.http, app.client.run\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'fastapi', 'sqlalchemy', 'sqlmodel', 'starlette', 'pydantic'}), "
        "[m for m in sys.modules if m.startswith(('app.store', 'app.api'))])"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=client_env(), check=True
    )
    assert run.stdout == "[] []\n"
