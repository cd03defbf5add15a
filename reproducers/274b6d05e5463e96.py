"""Reproducer for record 274b6d05e5463e96: "Total number of attention heads ({n}) must be
divisible by tensor parallel size ({tp}).".

A LLaMA-33B-shaped config.json (52 attention heads) is read with vLLM's own `get_config`
and turned into the architecture config ModelConfig keeps; a real ParallelConfig with
`tensor_parallel_size=8` (eight GPUs, as in the threads) then goes through
`ModelConfig.verify_with_parallel_config`, which raises. The fix takes the largest
tensor-parallel size up to the GPU count that divides 52: `-tp 4` (the other four GPUs can
serve a second replica).

The ModelConfig is made with `ModelConfig.__new__` and given only the architecture config
the check reads (state set directly, not through the constructor, which inspects the model
class in a subprocess importing the whole model stack).
vllm.v1.request's Request is stubbed: ParallelConfig's import chain reaches it (and the
structured-output backends behind it, which need xgrammar); the check never uses it.
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "274b6d05e5463e96"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.config.model",
    classes=("ModelConfig", "ParallelConfig"),
    stubs={"vllm.v1.request": ("Request",)},
    requirements=True,
)
DEVICES = ("cpu",)
HEADS = 52
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": HEADS * 128,
    "intermediate_size": 1024,
    "num_attention_heads": HEADS,
    "num_key_value_heads": HEADS,
    "num_hidden_layers": 2,
    "max_position_embeddings": 2048,
    "vocab_size": 1000,
    "torch_dtype": "float16",
}


def _model_config(module: ModuleType) -> object:
    """A ModelConfig holding the architecture config of a local 52-head model folder."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: nothing to download
    from vllm.transformers_utils import config as hf_configs
    from vllm.transformers_utils.model_arch_config_convertor import (
        ModelArchConfigConvertorBase,
    )

    with tempfile.TemporaryDirectory(prefix="errkb-model-") as folder:
        Path(folder, "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
        hf_config = hf_configs.get_config(folder, trust_remote_code=False)
    text_config = hf_configs.get_hf_text_config(hf_config)
    model_config = module.ModelConfig.__new__(module.ModelConfig)
    model_config.model_arch_config = ModelArchConfigConvertorBase(hf_config, text_config).convert(
        supports_multimodal=False
    )
    return model_config


def _parallel(tensor: int) -> object:
    from vllm.config.parallel import ParallelConfig

    return ParallelConfig(tensor_parallel_size=tensor)


def trigger(module: ModuleType, _device: str) -> None:
    """--tensor-parallel-size 8 for 52 heads."""
    _model_config(module).verify_with_parallel_config(_parallel(8))


def fix(module: ModuleType, _device: str) -> dict:
    """The largest tensor-parallel size up to eight GPUs that divides the head count."""
    model_config = _model_config(module)
    heads = model_config.model_arch_config.total_num_attention_heads
    tensor = max(size for size in range(1, 9) if heads % size == 0)
    parallel = _parallel(tensor)
    model_config.verify_with_parallel_config(parallel)
    require(heads == HEADS, f"the config gave {heads} heads")
    require(tensor == 4, f"picked --tensor-parallel-size {tensor} for {heads} heads")
    require(parallel.world_size == tensor, f"world size {parallel.world_size}")
    return {"heads": heads, "tensor_parallel_size": tensor, "world_size": parallel.world_size}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
