"""Reproducer for record be86eef068c68cc6: "Error initializing torch.distributed using env://
rendezvous: environment variable {VAR} expected, but not set".

init_process_group without an init_method rendezvous through RANK, WORLD_SIZE, MASTER_ADDR
and MASTER_PORT, and the env:// handler raises for the first one missing. The trigger calls
it in a process started without a launcher (none of the four set), as `python train.py` on a
torchrun script does; the extra scenario passes rank and world size by hand but forgets the
master's address. The fix sets the four variables as torchrun sets them for one process
(a free local port): the gloo group forms, answers as a group of one, and is destroyed.
"""

import os
import socket
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "be86eef068c68cc6"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.distributed.rendezvous",
    classes=(),
)
DEVICES = ("cpu",)
RENDEZVOUS_VARIABLES = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """Exactly `values` of the rendezvous variables set; the others unset; restored after."""
    saved = {name: os.environ.pop(name, None) for name in RENDEZVOUS_VARIABLES}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def trigger(_module: ModuleType, _device: str) -> None:
    """init_process_group in a process no launcher started."""
    import torch.distributed as dist

    with _environment({}):
        dist.init_process_group("gloo")


def trigger_no_master(_module: ModuleType, _device: str) -> None:
    """RANK and WORLD_SIZE exported by hand, MASTER_ADDR and MASTER_PORT forgotten."""
    import torch.distributed as dist

    with _environment({"RANK": "0", "WORLD_SIZE": "1"}):
        dist.init_process_group("gloo")


def fix(_module: ModuleType, _device: str) -> dict:
    """The four variables as torchrun sets them for one local process."""
    import torch.distributed as dist

    values = {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    values["MASTER_PORT"] = str(_free_port())
    with _environment(values):
        dist.init_process_group("gloo")
        try:
            size, rank = dist.get_world_size(), dist.get_rank()
        finally:
            dist.destroy_process_group()
    require((size, rank) == (1, 0), f"world size {size}, rank {rank}, not 1 and 0")
    require(not dist.is_initialized(), "the process group is still there after destroy")
    return {"init_method": "env://", "world_size": size, "rank": rank}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"no_master": trigger_no_master},
        )
    )
