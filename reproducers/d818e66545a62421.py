"""Reproducer for record d818e66545a62421: "{name} is unsupported LoRA weight".

vLLM reads a LoRA adapter's tensor names with parse_fine_tuned_lora_name before it loads
any weight (LoRAModel.from_local_checkpoint's check_unexpected_modules, then
from_lora_tensors): a name must end in `lora_A.weight`/`lora_B.weight`,
`lora_embedding_A`/`lora_embedding_B`, or be a classification head (`score`, `classifier`).
Any other tensor is refused with this ValueError. The trigger reads the keys of an adapter
saved by PEFT with `modules_to_save=["lm_head"]`, which adds the full
`base_model.model.lm_head.weight` beside the LoRA pairs (the threads' lm_head case); the
extra scenario is a DoRA adapter, whose `lora_magnitude_vector` vLLM does not load. The fix
saves the adapter without the full-weight tensors (LoRA pairs only): every name then
parses to its module.

Stubbed: the LoRA layer classes, LoRAConfig, the model-executor layers and helpers, and
hf_api that vllm.lora.utils imports for its other functions (layer replacement, the Hub
lookup); parse_fine_tuned_lora_name uses none of them. transformers and huggingface_hub
come from the release's cached environment (`requirements=True`).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "d818e66545a62421"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.lora.utils",
    classes=(),
    stubs={
        "vllm.config.lora": ("LoRAConfig",),
        "vllm.lora.layers": (
            "BaseClassificationHeadWithLoRA",
            "BaseLayerWithLoRA",
            "ClassificationHeadWithLoRA",
            "ColumnParallelLinearWithLoRA",
            "ColumnParallelLinearWithShardedLoRA",
            "FusedMoE3DWithLoRA",
            "FusedMoEWithLoRA",
            "LogitsProcessorWithLoRA",
            "MergedColumnParallelLinearVariableSliceWithLoRA",
            "MergedColumnParallelLinearWithLoRA",
            "MergedColumnParallelLinearWithShardedLoRA",
            "MergedQKVParallelLinearWithLoRA",
            "MergedQKVParallelLinearWithShardedLoRA",
            "QKVParallelLinearWithLoRA",
            "QKVParallelLinearWithShardedLoRA",
            "ReplicatedLinearWithLoRA",
            "RowParallelLinearWithLoRA",
            "RowParallelLinearWithShardedLoRA",
            "Step5FusedQKVIndexerWithLoRA",
            "Step5SparseIndexerWWithLoRA",
            "TokenClassificationHeadWithLoRA",
            "VocabParallelEmbeddingWithLoRA",
        ),
        "vllm.model_executor.custom_op": ("maybe_get_oot_by_class",),
        "vllm.model_executor.layers.fused_moe": ("MoERunner",),
        "vllm.model_executor.layers.linear": ("LinearBase",),
        "vllm.model_executor.layers.vocab_parallel_embedding": ("VocabParallelEmbedding",),
        "vllm.model_executor.utils": ("get_moe_expert_mapping", "get_packed_modules_mapping"),
        "vllm.transformers_utils.repo_utils": ("hf_api",),
    },
    requirements=True,
)
DEVICES = ("cpu",)
PREFIX = "base_model.model.model.layers.0.self_attn"
# The tensor names PEFT saves for a rank-8 adapter on q_proj and v_proj of one layer.
LORA_PAIRS = [
    f"{PREFIX}.{module}.{matrix}.weight"
    for module in ("q_proj", "v_proj")
    for matrix in ("lora_A", "lora_B")
]
LM_HEAD = "base_model.model.lm_head.weight"  # saved whole by modules_to_save=["lm_head"]
DORA = f"{PREFIX}.q_proj.lora_magnitude_vector"  # use_dora=True adds one per module


def _parse(module: ModuleType, names: list[str]) -> dict[str, tuple[str, bool]]:
    """What vLLM's check of an adapter's tensor names reads from each name."""
    return {name: module.parse_fine_tuned_lora_name(name) for name in names}


def trigger(module: ModuleType, _device: str) -> None:
    """An adapter trained with modules_to_save=["lm_head"]."""
    _parse(module, [*LORA_PAIRS, LM_HEAD])


def trigger_dora(module: ModuleType, _device: str) -> None:
    """A DoRA adapter (use_dora=True)."""
    _parse(module, [*LORA_PAIRS, DORA])


def fix(module: ModuleType, _device: str) -> dict:
    """The adapter saved with its LoRA pairs only: every name parses to its module."""
    saved = [*LORA_PAIRS, LM_HEAD]
    kept = [name for name in saved if name.rsplit(".", 2)[-2] in ("lora_A", "lora_B")]
    parsed = _parse(module, kept)
    modules = sorted({name for name, _ in parsed.values()})
    require(LM_HEAD not in kept, "the full lm_head weight is still in the adapter")
    require(
        modules == ["model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj"],
        f"parsed modules {modules}",
    )
    require(sum(is_a for _, is_a in parsed.values()) == 2, "one lora_A per module")
    return {"dropped": sorted(set(saved) - set(kept)), "modules": modules}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"dora": trigger_dora}))
