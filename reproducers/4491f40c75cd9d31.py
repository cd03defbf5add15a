"""Reproducer for record 4491f40c75cd9d31: "To serve at least one request with the model's max
seq len ({n}), ({x} GiB KV cache is needed, which is larger than the available KV cache memory
({y} GiB). ...".

The engine core checks, after profiling, that the KV cache can hold one sequence of
max_model_len tokens. Here the layers are those of Llama-3.1-8B as vLLM describes them
(32 real `FullAttentionSpec`s: 8 KV heads of 128 in bfloat16, 16-token blocks) and the
check runs with its real helpers: `max_memory_usage_bytes` for the need and
`estimate_max_model_len` for the estimate. The trigger serves the model's full 131072-token
context with 3.6 GiB left for the cache (a 24 GiB GPU at the default utilization after the
weights); the fix sets max_model_len to a length below the estimate the message printed,
and the same memory then holds it.

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

RECORD_ID = "4491f40c75cd9d31"
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
LAYERS = 32
FULL_CONTEXT = 131072
AVAILABLE = int(3.6 * GIB)


def _config(max_model_len: int) -> SimpleNamespace:
    parallel = SimpleNamespace(decode_context_parallel_size=1, prefill_context_parallel_size=1)
    return SimpleNamespace(
        model_config=SimpleNamespace(max_model_len=max_model_len), parallel_config=parallel
    )


def _specs() -> dict:
    import torch
    from vllm.v1.kv_cache_interface import FullAttentionSpec

    spec = FullAttentionSpec(block_size=16, num_kv_heads=8, head_size=128, dtype=torch.bfloat16)
    return {f"model.layers.{layer}.self_attn": spec for layer in range(LAYERS)}


def _check(module: ModuleType, config: SimpleNamespace, available: int) -> None:
    """What check_enough_kv_cache_memory runs, with the layers' real specs."""
    specs = _specs()
    module._check_enough_kv_cache_memory(
        available,
        lambda: module.max_memory_usage_bytes(config, specs.values()),
        config.model_config.max_model_len,
        lambda memory: module.estimate_max_model_len(config, specs, memory),
    )


def trigger(module: ModuleType, _device: str) -> None:
    """The full 131072-token context against 3.6 GiB of KV cache."""
    _check(module, _config(FULL_CONTEXT), AVAILABLE)


def fix(module: ModuleType, _device: str) -> dict:
    """max_model_len within the estimate vLLM prints for this memory."""
    estimate = module.estimate_max_model_len(_config(FULL_CONTEXT), _specs(), AVAILABLE)
    chosen = 16384
    require(chosen <= estimate, f"the estimate {estimate} is below {chosen}")
    config = _config(chosen)
    _check(module, config, AVAILABLE)
    needed = module.max_memory_usage_bytes(config, _specs().values())
    require(needed <= AVAILABLE, f"{needed} bytes needed, {AVAILABLE} available")
    return {"estimate": estimate, "max_model_len": chosen, "needed_gib": needed / GIB}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
