"""Reproducer for record c14fef0d76688b85: "{name} FAILED ... Root Cause (first observed failure)".

torchrun's launch_agent raises ChildFailedError when its worker group failed. The trigger
is the migration case of the threads: an entry point written for torch.distributed.launch,
which passed `--local_rank`, started by the elastic launcher (what torchrun runs), which
passes no such argument; argparse exits with code 2 in every rank and the launcher reports
the group as failed. The fix reads LOCAL_RANK from the environment the launcher sets: every
rank returns its local rank.

The launcher runs two workers on this machine, over a c10d rendezvous on a free local port;
workers start with fork to keep the run short.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import argparse
import os
import sys
import uuid
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "c14fef0d76688b85"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.distributed.launcher.api",
    classes=("LaunchConfig",),
)
DEVICES = ("cpu",)
NPROC = 2


def old_style_train(argv: list) -> int:
    """An entry point written for torch.distributed.launch."""
    parser = argparse.ArgumentParser(prog="train.py")
    parser.add_argument("--local_rank", type=int, required=True)
    return parser.parse_args(argv).local_rank


def train() -> int:
    """The same entry point reading the launcher's environment."""
    return int(os.environ["LOCAL_RANK"])


def _launch(module: ModuleType, entrypoint: object, *args: object) -> dict:
    config = module.LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=NPROC,
        run_id=str(uuid.uuid4()),
        rdzv_backend="c10d",
        rdzv_endpoint="127.0.0.1:0",
        max_restarts=0,
        monitor_interval=0.1,
        start_method="fork",
    )
    return module.elastic_launch(config, entrypoint)(*args)


def trigger(module: ModuleType, _device: str) -> None:
    """`--local_rank` required, none passed."""
    _launch(module, old_style_train, [])


def fix(module: ModuleType, _device: str) -> dict:
    """LOCAL_RANK read from the environment."""
    returned = _launch(module, train)
    require(returned == {0: 0, 1: 1}, f"the ranks returned {returned}")
    return {"nproc_per_node": NPROC, "returned": returned}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
