"""Reproducer for record 220aadf8325454c6: "TP rank {tp_rank} could finish the model loading,
but there are other ranks that didn't finish loading. ...".

After loading its shard, each tensor-parallel rank of SGLang calls dist_barrier_after_load,
which waits for every rank with torch.distributed.monitored_barrier on the TP group's CPU
(gloo) group; when a rank does not arrive, the barrier's RuntimeError becomes this
ValueError on the ranks that did. The trigger is a TP group of two ranks on CPU (gloo): rank
1 joins the group, then its "loading" fails and its process exits; rank 0, which finished,
runs the release's dist_barrier_after_load and raises the record's error naming rank 0. The
fix is the same group where rank 1 loads too and reaches its barrier: rank 0's barrier then
returns.

Stand-ins, said here: sglang.srt.runtime_context is a stand-in whose get_parallel() holds
the gloo group as `tp_group.cpu_group` (the real context is built by SGLang's launcher and
needs a published parallel config); sglang.srt.utils.common imports triton, which does not
import on CPU, so its is_npu, called at import, answers as on this machine (False). Stubbed:
the loader, configs, platforms and other names the module imports for loading weights,
which the barrier never uses. The barrier's timeout (480 s in the release) is set to 20 s so
that the run stays short; a rank that died is reported at once either way.
"""

import datetime
import multiprocessing
import os
import socket
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "220aadf8325454c6"
CONTEXT = "sglang.srt.runtime_context"
COMMON = "sglang.srt.utils.common"
TARGET = Target(
    package="sglang",
    version="0.5.23",
    module="sglang.srt.model_executor.model_runner_components.load_model_utils",
    classes=(),
    stubs={
        "sglang.srt.arg_groups.overrides": ("modelexpress_transport_of", "modelexpress_url_of"),
        "sglang.srt.configs.device_config": ("DeviceConfig",),
        "sglang.srt.configs.load_config": (
            "_DEFAULT_LOAD_GROUP",
            "LoadConfig",
            "LoadFormat",
            "LoadGroup",
        ),
        "sglang.srt.constants": ("GPU_MEMORY_TYPE_WEIGHTS",),
        "sglang.srt.debug_utils.tensor_dump_forward_hook": ("register_forward_hook_for_model",),
        "sglang.srt.distributed.parallel_state": ("monkey_patch_vllm_parallel_state",),
        "sglang.srt.model_loader.loader": ("get_model_loader",),
        "sglang.srt.model_loader.remote_instance_weight_loader_utils": (
            "RemoteInstanceWeightLoaderBackend",
            "trigger_init_weights_send_group_for_remote_instance_request",
        ),
        "sglang.srt.platforms": ("current_platform",),
        CONTEXT: ("get_context", "get_exec", "get_model", "get_observability"),
        "sglang.srt.utils.network": ("NetworkAddress",),
    },
)
DEVICES = ("cpu",)
BARRIER_TIMEOUT_S = 20
WORLD_SIZE = 2


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _other_rank(port: int, loads: bool) -> None:
    """Rank 1: joins the TP group, then either fails to load (exits) or reaches the barrier."""
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=1, world_size=WORLD_SIZE
    )
    if loads:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=BARRIER_TIMEOUT_S))
        dist.destroy_process_group()
    else:
        os._exit(1)  # the shard failed to load: the process dies without a barrier


def _stand_ins() -> None:
    """The runtime context and the platform probe the module reads (see the docstring)."""
    context = sys.modules.get(CONTEXT) or ModuleType(CONTEXT)
    context.get_parallel = lambda: SimpleNamespace(tp_group=SimpleNamespace(cpu_group=None))
    sys.modules[CONTEXT] = context
    common = sys.modules.get(COMMON) or ModuleType(COMMON)
    common.is_npu = lambda: False
    sys.modules[COMMON] = common


def _barrier(module: ModuleType, other_loads: bool) -> None:
    """Rank 0 finished loading and waits for rank 1 with the release's barrier."""
    import torch.distributed as dist

    port = _free_port()
    other = multiprocessing.get_context("spawn").Process(
        target=_other_rank, args=(port, other_loads)
    )
    other.start()
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=WORLD_SIZE
    )
    group = dist.group.WORLD
    sys.modules[CONTEXT].get_parallel = lambda: SimpleNamespace(
        tp_group=SimpleNamespace(cpu_group=group)
    )
    module.UNBALANCED_MODEL_LOADING_TIMEOUT_S = BARRIER_TIMEOUT_S
    try:
        module.dist_barrier_after_load(elastic_ep_backend=None, tp_rank=0)
    finally:
        dist.destroy_process_group()
        other.join(BARRIER_TIMEOUT_S)
        if other.is_alive():
            other.kill()


def trigger(module: ModuleType, _device: str) -> None:
    """Rank 1's loading fails and its process exits before the barrier."""
    _barrier(module, other_loads=False)


def fix(module: ModuleType, _device: str) -> dict:
    """Rank 1 loads its shard too (the failing rank's cause fixed): the barrier returns."""
    _barrier(module, other_loads=True)
    require(module.UNBALANCED_MODEL_LOADING_TIMEOUT_S == BARRIER_TIMEOUT_S, "timeout not set")
    return {"tp_ranks": WORLD_SIZE, "barrier": "passed"}


if __name__ == "__main__":
    _stand_ins()
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
