"""Reproducer for record 2e818bedc5891ef6: "User-specified max_model_len ({n}) is greater than
the derived max_model_len ({key}={m} or model_max_length={k} in model's config.json). ...".

A model folder holds a Llama config.json trained for 2048 positions. vLLM reads it with its own
`get_config` (transformers' LlamaConfig, offline), derives the architecture config as
ModelConfig does, and `_get_and_verify_max_len` compares the user's max_model_len with the
derived length. The trigger asks for 8192, as `vllm serve --max-model-len 8192` would; the
fix stays within the trained length (or leaves max_model_len unset), and the length vLLM
then uses is checked.

The function is called directly rather than through ModelConfig(...): constructing a
ModelConfig inspects the architecture in a subprocess that imports the whole model stack.
Nothing is stubbed; the release's CPU requirements (transformers, huggingface_hub...) come
from the cached environment (`requirements=True`).
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "2e818bedc5891ef6"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.config.model",
    classes=("ModelConfig",),
    requirements=True,
)
DEVICES = ("cpu",)
TRAINED_LENGTH = 2048
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "num_hidden_layers": 2,
    "max_position_embeddings": TRAINED_LENGTH,
    "vocab_size": 1000,
    "torch_dtype": "float16",
}


def _max_len(module: ModuleType, max_model_len: int | None) -> int:
    """What ModelConfig.get_and_verify_max_len computes for a local model folder."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: nothing to download
    from vllm.transformers_utils import config as hf_configs
    from vllm.transformers_utils.model_arch_config_convertor import (
        ModelArchConfigConvertorBase,
    )

    with tempfile.TemporaryDirectory(prefix="errkb-model-") as folder:
        Path(folder, "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
        hf_config = hf_configs.get_config(folder, trust_remote_code=False)
    text_config = hf_configs.get_hf_text_config(hf_config)
    convertor = ModelArchConfigConvertorBase(hf_config, text_config)
    return module._get_and_verify_max_len(
        hf_config=text_config,
        model_arch_config=convertor.convert(supports_multimodal=False),
        tokenizer_config=None,
        max_model_len=max_model_len,
        disable_sliding_window=False,
        sliding_window=None,
    )


def trigger(module: ModuleType, _device: str) -> None:
    """--max-model-len 8192 for a model trained on 2048 positions."""
    _max_len(module, 8192)


def fix(module: ModuleType, _device: str) -> dict:
    """Within the trained length, or unset (the derived length)."""
    chosen = _max_len(module, TRAINED_LENGTH)
    derived = _max_len(module, None)
    require(chosen == TRAINED_LENGTH, f"--max-model-len {TRAINED_LENGTH} gave {chosen}")
    require(derived == TRAINED_LENGTH, f"unset max_model_len derived {derived}")
    return {"max_model_len": chosen, "derived": derived}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
