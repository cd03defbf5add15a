"""Reproducer for record cb43aea2096bc452: "Default process group has not been initialized,
please make sure to call init_process_group.".

torch.distributed's _get_default_group raises when no default process group exists. The
trigger asks for the world size as a distributed training script does when it is started
with plain `python` instead of its launcher; the extra scenarios build a DistributedSampler
without a rank and wait at a barrier. The fix joins a one-process gloo group first: the
same calls then answer (world size 1, rank 0, an all_reduce that keeps the value) and the
group is destroyed again.
"""

import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "cb43aea2096bc452"
TARGET = Target(
    package="torch",
    version="2.13.0",
    module="torch.distributed.distributed_c10d",
    classes=(),
)
DEVICES = ("cpu",)


def trigger(module: ModuleType, _device: str) -> None:
    """The world size, asked before any init_process_group."""
    module.get_world_size()


def trigger_sampler(_module: ModuleType, _device: str) -> None:
    """A DistributedSampler that reads rank and world size from the default group."""
    from torch.utils.data import DistributedSampler

    DistributedSampler(list(range(8)))


def trigger_barrier(module: ModuleType, _device: str) -> None:
    """A barrier, as evaluation helpers call between ranks."""
    module.barrier()


def fix(module: ModuleType, _device: str) -> dict:
    """A one-process gloo group (file rendezvous), joined before any collective."""
    import torch

    with tempfile.TemporaryDirectory(prefix="errkb-pg-") as folder:
        init = Path(folder, "init").as_uri()
        module.init_process_group("gloo", init_method=init, rank=0, world_size=1)
        try:
            size, rank = module.get_world_size(), module.get_rank()
            value = torch.tensor([3.0])
            module.all_reduce(value)
            module.barrier()
        finally:
            module.destroy_process_group()
    require((size, rank) == (1, 0), f"world size {size}, rank {rank}, not 1 and 0")
    require(value.item() == 3.0, f"all_reduce over one process gave {value.item()}")
    require(not module.is_initialized(), "the process group is still there after destroy")
    return {"backend": "gloo", "world_size": size, "rank": rank, "all_reduce": value.item()}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"sampler": trigger_sampler, "barrier": trigger_barrier},
        )
    )
