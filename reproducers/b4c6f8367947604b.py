"""Reproducer for record b4c6f8367947604b: "DataLoader worker (pid(s) {pids}) exited unexpectedly".

The DataLoader's multiprocessing iterator raises this when it finds a dead worker while it
waits for a batch. The trigger is the classic Windows and macOS case: a training script that
builds and iterates its DataLoader at module level, without `if __name__ == "__main__":`,
run with the spawn start method; every worker re-imports the script as its main module, runs
the loop again, and dies at start (multiprocessing refuses to start a process while the main
module is still being imported, pointing at its "Safe importing of main module" advice). The
script runs as the main module through runpy, as `python train.py` would run it. The extra scenario
is a worker killed by SIGKILL, as the kernel's OOM killer ends one. The fix is the same
script with its entry point guarded, run as `python train.py` in a fresh interpreter: the
workers only import it and every batch arrives.
"""

import runpy
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "b4c6f8367947604b"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.utils.data.dataloader",
    classes=("DataLoader",),
)
DEVICES = ("cpu",)
DATASET = """\
import os
import signal
import time

import torch
from torch.utils.data import DataLoader, Dataset

KILL_AFTER_S = 1.0


class Squares(Dataset):
    def __init__(self, kill_at=None):
        self.kill_at = kill_at

    def __len__(self):
        return 8

    def __getitem__(self, index):
        if index == self.kill_at:
            time.sleep(KILL_AFTER_S)  # the main process is waiting for this batch by then
            os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does to a worker
        return torch.tensor([index * index])


def total(dataset, context):
    loader = DataLoader(dataset, batch_size=2, num_workers=1, multiprocessing_context=context)
    return sum(int(batch.sum()) for batch in loader)
"""
UNGUARDED = DATASET + '\n\nTOTAL = total(Squares(), "spawn")\n'
GUARDED = DATASET + '\n\nif __name__ == "__main__":\n    print(total(Squares(), "spawn"))\n'
KILLED = DATASET + '\n\nif __name__ == "__main__":\n    TOTAL = total(Squares(kill_at=0), "fork")\n'
SQUARES_TOTAL = sum(index * index for index in range(8))
FIX_TIMEOUT_S = 240


def _run_as_main(source: str) -> dict:
    """The script `source`, run as `python train.py` runs it; its globals."""
    with tempfile.TemporaryDirectory(prefix="errkb-dataloader-") as folder:
        script = Path(folder, "train.py")
        script.write_text(source, encoding="utf-8")
        return runpy.run_path(str(script), run_name="__main__")


def trigger(_module: ModuleType, _device: str) -> None:
    """Spawned workers re-run the unguarded loop and die at start."""
    _run_as_main(UNGUARDED)


def trigger_killed(_module: ModuleType, _device: str) -> None:
    """A worker killed by SIGKILL while it builds a batch."""
    _run_as_main(KILLED)


def fix(_module: ModuleType, _device: str) -> dict:
    """The entry point under `if __name__ == "__main__":`, run as `python train.py` in a
    fresh interpreter; its spawned workers only import the script."""
    with tempfile.TemporaryDirectory(prefix="errkb-dataloader-") as folder:
        script = Path(folder, "train.py")
        script.write_text(GUARDED, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            timeout=FIX_TIMEOUT_S,
            check=False,
        )
    require(done.returncode == 0, f"train.py exited {done.returncode}: {done.stderr[-500:]}")
    total = int(done.stdout.split()[-1])
    require(total == SQUARES_TOTAL, f"the batches sum to {total}, not {SQUARES_TOTAL}")
    return {"context": "spawn", "num_workers": 1, "total": total}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"worker_killed": trigger_killed},
        )
    )
