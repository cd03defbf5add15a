"""Reproducer for record c9c508eec98b77e3: "Not enough memory. Please try to increase
--mem-fraction-static.".

SGLang sizes its KV cache after loading the weights: the budget is the memory free now
minus a reserve of `pre_model_load_memory * (1 - mem_fraction_static)`
(KVCacheConfigurator._profile_available_bytes), and the pool configurator divides it by the
bytes one token's K and V take in every layer. DefaultPoolConfigurator.calculate_pool_sizes
clamps a negative budget to 0 tokens, and MemoryPoolConfig.__post_init__ refuses a pool of 0
tokens with this RuntimeError. The trigger is a 7B bf16 model (15.2 GiB of weights) on a
24 GiB GPU at --mem-fraction-static 0.6: the reserve (9.4 GiB) is larger than what the
weights left free (8.3 GiB). The fix raises the fraction to 0.85, as the message says: the
same GPU and model then get a KV pool of about 89,000 tokens. The extra scenario is a
configurator that passes the fraction on, which adds the "Current value" tail.

The budget is computed here with the release's formula (a GPU's free memory cannot be
measured on CPU), and the configurator is made with `__new__`, with the three attributes
calculate_pool_sizes reads set directly (not through its constructor, which reads the model
and parallel state): the per-token cell size of Qwen2.5-7B (28 layers, 4 KV heads of 128,
bf16), no fixed overhead, page size 1. Stubbed: every SGLang name pool_configurator imports
for the other configurators (model configs, memory pools, runtime context, environment
variables); sglang.srt.utils.common imports triton, which does not import on CPU, so it
stands in with the two platform probes the module calls at import answering as on this CPU
machine (not HIP, not NPU), and stubs for its other names. MemoryPoolConfig and
calculate_pool_sizes run unmodified.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "c9c508eec98b77e3"
COMMON = "sglang.srt.utils.common"
TARGET = Target(
    package="sglang",
    version="0.5.23",
    module="sglang.srt.model_executor.pool_configurator",
    classes=("MemoryPoolConfig", "DefaultPoolConfigurator"),
    stubs={
        "sglang.srt.arg_groups.overrides": ("resolving_view",),
        "sglang.srt.configs.hybrid_arch": ("mambaish_config",),
        "sglang.srt.configs.model_config": (
            "AttentionArch",
            "dsa_layer_skips_topk",
            "get_dsa_index_head_dim",
            "get_dsa_index_kpool",
            "get_minimax_sparse_attention_config",
            "get_minimax_sparse_disable_value_layer_ids",
            "get_minimax_sparse_layer_ids",
            "is_deepseek_dsa",
            "is_deepseek_v4",
            "is_minimax_sparse",
            "uses_minimax_m3_nvfp4_native_stack",
        ),
        "sglang.srt.environ": ("envs",),
        "sglang.srt.mem_cache.allocation_sizing": ("get_alloc_len_per_decode",),
        "sglang.srt.mem_cache.deepseek_v4_memory_pool": (
            "collect_sources_by_ratio",
            "get_compress_state_write_pad",
            "get_draft_swa_ring_size",
            "get_dsv4_indexer_bytes_per_token",
            "get_swa_ring_size",
            "resolve_compress_state_ring_size",
            "uses_draft_swa_ring",
        ),
        "sglang.srt.mem_cache.memory_pool": ("DSATokenToKVPool", "get_minimax_sparse_index_dtype"),
        "sglang.srt.mem_cache.page_interleave": ("compute_page_shard_scratch_bytes",),
        "sglang.srt.runtime_context": (
            "get_disagg",
            "get_exec",
            "get_memory",
            "get_model",
            "get_parallel",
            "get_schedule",
            "get_spec",
            "max_speculative_num_draft_tokens",
        ),
        COMMON: (
            "ceil_align",
            "ceil_div",
            "is_float4_e2m1fn_x2",
            "spec_decode_alloc_len_per_request",
        ),
    },
)
DEVICES = ("cpu",)
GIB = 1 << 30
PRE_LOAD_FREE = int(23.5 * GIB)  # a 24 GiB GPU before the weights are loaded
WEIGHTS = int(15.2 * GIB)  # Qwen2.5-7B-Instruct in bf16
CELL_SIZE = 28 * 2 * 4 * 128 * 2  # layers x (K, V) x KV heads x head dim x bf16 bytes
PAGE_SIZE = 1


def _platform_probes() -> None:
    """pool_configurator calls is_hip() and is_npu() at import: answer as this machine."""
    common = sys.modules.get(COMMON) or ModuleType(COMMON)
    common.is_hip = lambda: False
    common.is_npu = lambda: False
    sys.modules[COMMON] = common


def _pool(module: ModuleType, mem_fraction_static: float) -> object:
    """The KV pool SGLang sizes for the model at this --mem-fraction-static."""
    reserve = PRE_LOAD_FREE * (1 - mem_fraction_static)
    budget = int((PRE_LOAD_FREE - WEIGHTS) - reserve)
    configurator = module.DefaultPoolConfigurator.__new__(module.DefaultPoolConfigurator)
    configurator._cell_size = CELL_SIZE
    configurator._fixed_overhead_bytes = 0
    configurator._zero_kv_max_tokens = 0
    return configurator.calculate_pool_sizes(budget, PAGE_SIZE)


def trigger(module: ModuleType, _device: str) -> None:
    """--mem-fraction-static 0.6: the reserve exceeds what the weights left free."""
    _pool(module, 0.6)


def trigger_with_value(module: ModuleType, _device: str) -> None:
    """A pool config that carries the fraction: the message names its value."""
    module.MemoryPoolConfig(max_total_num_tokens=0, mem_fraction_static=0.2)


def fix(module: ModuleType, _device: str) -> dict:
    """--mem-fraction-static 0.85: the same model and GPU get a KV pool."""
    config = _pool(module, 0.85)
    tokens = config.max_total_num_tokens
    require(tokens > 0, f"the pool holds {tokens} tokens")
    require(tokens * CELL_SIZE <= PRE_LOAD_FREE - WEIGHTS, "the pool exceeds the free memory")
    return {"mem_fraction_static": 0.85, "max_total_num_tokens": tokens}


if __name__ == "__main__":
    _platform_probes()
    sys.exit(
        main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"value": trigger_with_value})
    )
