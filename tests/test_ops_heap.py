"""Once start-up is done, its heap is frozen out of the garbage collector's way.
In a subprocess, since freezing is process-wide and the test process builds many apps."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from app.ops.heap import YOUNG_GENERATION_THRESHOLD

SERVE_AND_REPORT = textwrap.dedent(
    """
    import gc, json, sys, time
    from fastapi.testclient import TestClient
    from app.config import Settings
    from app.main import create_app

    settle = sys.argv[2] == "1"
    settings = Settings(database_url=f"sqlite:///{sys.argv[1]}", settle_heap=settle)
    with TestClient(create_app(settings)) as client:
        for _ in range(600):
            if client.get("/readyz").status_code == 200:
                break
            time.sleep(0.1)
        frozen, young = gc.get_freeze_count(), gc.get_threshold()[0]
        ready = client.get("/readyz").status_code
    print(json.dumps({"frozen": frozen, "young": young, "ready": ready}))
    """
)


def _served(tmp_path: Path, settle: bool) -> dict:
    database = tmp_path / f"settle-{int(settle)}.db"
    command = [sys.executable, "-c", SERVE_AND_REPORT, str(database), str(int(settle))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_start_up_freezes_its_heap_and_collects_young_objects_less_often(tmp_path: Path) -> None:
    settled = _served(tmp_path, settle=True)
    assert settled["ready"] == 200
    assert settled["frozen"] > 10_000  # the imported libraries and the app, at the least
    assert settled["young"] == YOUNG_GENERATION_THRESHOLD


def test_settle_heap_off_leaves_the_collector_alone(tmp_path: Path) -> None:
    plain = _served(tmp_path, settle=False)
    assert plain["ready"] == 200
    assert plain["frozen"] == 0
    assert plain["young"] != YOUNG_GENERATION_THRESHOLD
