"""Reproducer for record d6814a5cbefc4741: "Error in memory profiling. Initial free memory {x}
GiB, current free memory {y} GiB. ..." (AssertionError).

Before sizing the KV cache, each GPU worker runs the model once on dummy inputs inside
`memory_profiling` (vllm/utils/mem_utils.py) and compares the device's free memory after it
with the free memory measured when the worker started (`Worker.determine_available_memory`):
vLLM assumes that nothing else on the GPU gave memory back meanwhile, and the assertion
fails when free memory rose. The trigger is a neighbour on the same GPU, another process
holding 2 GiB (a trainer, a notebook, a previous engine shutting down), that exits while the
worker profiles. The fix is the record's "ensure consistent GPU memory allocation": the same
neighbour keeps its memory until the engine has started; the same call then measures and
returns a KV cache budget.

Needs CUDA (the measurement is the device's free memory, `torch.accelerator.get_memory_info`);
on a machine without it the run is skipped. Not yet run on a GPU: only its Worker state was
checked, on CPU with torch's device-memory calls faked (the assertion raised, the fix returned
a budget). The Worker is made with `Worker.__new__` and given only what
determine_available_memory reads (state set directly, not through the constructor, which
initialises the device, the distributed groups and the model runner): the start-up memory
snapshot, the requested memory at `gpu_memory_utilization` 0.5, a cache config without
`kv_cache_memory_bytes`, no CUDA graphs, and a model runner stand-in whose "weights" are a 256
MiB tensor and whose profile run allocates and frees 512 MiB of activations. The release's
memory_profiling, MemorySnapshot and the assertion run unmodified. vllm._C_stable_libtorch
(compiled custom ops the CUDA platform imports) is stubbed, as an empty module: the sdist has
none.
"""

import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "d6814a5cbefc4741"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.v1.worker.gpu_worker",
    classes=("Worker",),
    stubs={"vllm._C_stable_libtorch": ()},
    requirements=True,
)
DEVICES = ("cuda",)
MIB = 1 << 20
NEIGHBOUR = (
    "import sys, torch; held = torch.empty(2 << 30, dtype=torch.uint8, device='cuda'); "
    "torch.cuda.synchronize(); print('ready', flush=True); sys.stdin.read()"
)


def _neighbour() -> subprocess.Popen:
    """Another process on the same GPU holding 2 GiB until its stdin closes."""
    process = subprocess.Popen(
        [sys.executable, "-c", NEIGHBOUR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    require(process.stdout.readline().strip() == "ready", "the neighbour did not start")
    return process


def _release(process: subprocess.Popen) -> None:
    """The neighbour exits, and its memory goes back to the GPU."""
    process.stdin.close()
    process.wait(timeout=60)


class _ModelRunner:
    """The model runner's two members the profiling reads: weights held, a dummy forward."""

    def __init__(self, during_profile: object) -> None:
        import torch

        self.weights = torch.empty(256 * MIB, dtype=torch.uint8, device="cuda")
        self.model_memory_usage = self.weights.numel()
        self.during_profile = during_profile

    def profile_run(self, **_options: bool) -> None:
        """A forward pass on dummy inputs (its options, randomize_inputs, change nothing here)."""
        import torch

        activations = torch.empty(512 * MIB, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        del activations
        self.during_profile()


def _worker(module: ModuleType, during_profile: object) -> object:
    """A worker that took its start-up snapshot, then loaded its weights."""
    import torch
    from vllm.config.compilation import CUDAGraphMode
    from vllm.utils.mem_utils import MemorySnapshot

    worker = module.Worker.__new__(module.Worker)
    worker.init_snapshot = MemorySnapshot(device=torch.device("cuda", torch.cuda.current_device()))
    worker.cache_config = SimpleNamespace(kv_cache_memory_bytes=None, gpu_memory_utilization=0.5)
    worker.requested_memory = int(worker.init_snapshot.total_memory * 0.5)
    worker.vllm_config = SimpleNamespace(
        compilation_config=SimpleNamespace(
            cudagraph_mode=CUDAGraphMode.NONE, cudagraph_mm_encoder=False
        )
    )
    worker.model_config = SimpleNamespace(enforce_eager=True, multimodal_config=None)
    worker.parallel_config = SimpleNamespace(data_parallel_size=1)
    worker.use_v2_model_runner = False
    worker.model_runner = _ModelRunner(during_profile)
    return worker


def trigger(module: ModuleType, _device: str) -> None:
    """The neighbour exits while the worker profiles."""
    neighbour = _neighbour()
    try:
        _worker(module, lambda: _release(neighbour)).determine_available_memory()
    finally:
        if neighbour.poll() is None:
            _release(neighbour)


def fix(module: ModuleType, _device: str) -> dict:
    """The neighbour keeps its memory until the engine has started."""
    neighbour = _neighbour()
    try:
        worker = _worker(module, lambda: None)
        available = worker.determine_available_memory()
    finally:
        _release(neighbour)
    require(available > 0, f"a KV cache budget of {available} bytes")
    require(worker.total_consumed >= 0, f"{worker.total_consumed} bytes consumed")
    return {"kv_cache_bytes": available, "consumed_bytes": worker.total_consumed}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
