"""Reproducer for record 13b7b8ef9a21ba45: "RPC has not been initialized. Call
torch.distributed.rpc.init_rpc first.".

torch.distributed.rpc's public calls check that this process has an RPC agent. The trigger
sends an rpc_sync before any init_rpc, as a process that never joined the group does (a
worker started after the parent joined has no agent of its own either). The fix joins the
group in the process that sends (one worker, TensorPipe over a free local port), gets the
remote result back, and shuts the agent down.
"""

import os
import socket
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "13b7b8ef9a21ba45"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.distributed.rpc",
    classes=(),
)
DEVICES = ("cpu",)
WORKER = "worker0"


def add_one_remotely(value: float) -> float:
    """An addition run by the RPC worker."""
    import torch
    import torch.distributed.rpc as rpc

    return rpc.rpc_sync(WORKER, torch.add, args=(torch.tensor([value]), 1)).item()


def _join_group() -> None:
    """init_rpc for one process, its master on a free local port."""
    import torch.distributed.rpc as rpc

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    rpc.init_rpc(WORKER, rank=0, world_size=1)


def trigger(_module: ModuleType, _device: str) -> None:
    """rpc_sync in a process that never called init_rpc."""
    add_one_remotely(1.0)


def fix(module: ModuleType, _device: str) -> dict:
    """The sending process joins the group first."""
    _join_group()
    try:
        result = add_one_remotely(1.0)
        name = module.get_worker_info().name
    finally:
        module.shutdown()
    require(result == 2.0, f"the remote addition returned {result}")
    return {"worker": name, "result": result}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
