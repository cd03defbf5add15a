"""Reproducer for record 3fefc93fec466bb3: "No available memory for the cache blocks. Try
increasing `gpu_memory_utilization` when initializing the engine ...".

After loading the weights and profiling, the worker gives the KV cache what is left of
`total x gpu_memory_utilization`; the engine core's check refuses a budget of zero or less.
The budget is computed here as the worker does, from the figures of the threads: a 24 GiB
GPU, a 7B model whose bf16 weights take 15 GiB and 2 GiB of activations and graphs, with
`--gpu-memory-utilization 0.5` (the "lower it to share the GPU" mistake): minus 5 GiB. The
check then runs with the layers of Qwen2.5-7B as vLLM describes them (28 real
`FullAttentionSpec`s, 4 KV heads of 128) and raises. The fix raises the utilization to 0.92
and sets a context the remaining 5.1 GiB can hold: the same check passes.

`_check_enough_kv_cache_memory`, the raising function, is called as
`check_enough_kv_cache_memory` calls it, without the null-block reservation that needs the
grouped cache layout (a whole VllmConfig). The config is a plain object with the two fields
the specs read (`model_config.max_model_len`, the context-parallel sizes): state set
directly, not through VllmConfig. vllm.v1.request's Request is stubbed: kv_cache_utils imports
it (and through it the structured-output backends, which need xgrammar); the check never
uses it.
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "3fefc93fec466bb3"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.v1.core.kv_cache_planning",
    classes=("FullAttentionSpec",),
    stubs={"vllm.v1.request": ("Request",)},
    requirements=True,
)
DEVICES = ("cpu",)
GIB = 2**30
TOTAL, WEIGHTS, ACTIVATIONS = 24 * GIB, 15 * GIB, 2 * GIB
LAYERS = 28
MAX_MODEL_LEN = 8192


def _kv_budget(utilization: float) -> int:
    """What the worker leaves for the KV cache after the weights and the profiled peak."""
    return int(TOTAL * utilization) - WEIGHTS - ACTIVATIONS


def _config() -> SimpleNamespace:
    parallel = SimpleNamespace(decode_context_parallel_size=1, prefill_context_parallel_size=1)
    return SimpleNamespace(
        model_config=SimpleNamespace(max_model_len=MAX_MODEL_LEN), parallel_config=parallel
    )


def _check(module: ModuleType, available: int) -> int:
    """What check_enough_kv_cache_memory runs, with the layers' real specs; the bytes needed."""
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    spec = FullAttentionSpec(block_size=16, num_kv_heads=4, head_size=128, dtype=torch.bfloat16)
    specs = {f"model.layers.{layer}.self_attn": spec for layer in range(LAYERS)}
    config = _config()
    module._check_enough_kv_cache_memory(
        available,
        lambda: module.max_memory_usage_bytes(config, specs.values()),
        config.model_config.max_model_len,
        lambda memory: module.estimate_max_model_len(config, specs, memory),
    )
    return module.max_memory_usage_bytes(config, specs.values())


def trigger(module: ModuleType, _device: str) -> None:
    """--gpu-memory-utilization 0.5: 12 GiB for a model that takes 17."""
    _check(module, _kv_budget(0.5))


def fix(module: ModuleType, _device: str) -> dict:
    """--gpu-memory-utilization 0.92: room beyond the model for an 8192-token context."""
    available = _kv_budget(0.92)
    needed = _check(module, available)
    require(available > 0, f"the budget is {available / GIB:.2f} GiB")
    require(needed <= available, f"{needed} bytes needed, {available} available")
    return {"available_gib": round(available / GIB, 2), "needed_gib": needed / GIB}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
