"""Reproducer for record b6ab34616f9b786c: "Invalid repository ID or local directory specified:
'{model}'. Please verify the following requirements: ...".

vLLM's `get_config` decides the config format of `--model` before reading it; when no
config.json (or Mistral params.json) is found there, or the lookup itself fails, it raises
this ValueError from the underlying error. The trigger passes the parent folder of a model,
which holds the model's folder but no config.json of its own (the Docker volume mistake of
the threads); with HF_HUB_OFFLINE=1 no lookup leaves the machine. The fix passes the
model's own folder: the configuration is read (transformers' LlamaConfig) with its values.

Nothing is stubbed; the release's CPU requirements (transformers, huggingface_hub) come from
the cached environment (`requirements=True`).
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "b6ab34616f9b786c"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.transformers_utils.config",
    classes=(),
    requirements=True,
)
DEVICES = ("cpu",)
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "num_hidden_layers": 2,
    "max_position_embeddings": 4096,
    "vocab_size": 1000,
    "torch_dtype": "float16",
}


def _read(module: ModuleType, model: str) -> object:
    os.environ["HF_HUB_OFFLINE"] = "1"  # nothing leaves the machine
    return module.get_config(model, trust_remote_code=False)


def _volume(folder: str) -> Path:
    """A mounted volume `folder` holding one model, `Qwen2.5-7B-Instruct/config.json`."""
    model = Path(folder, "Qwen2.5-7B-Instruct")
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    return model


def trigger(module: ModuleType, _device: str) -> None:
    """--model /models: the volume, not the model's folder."""
    with tempfile.TemporaryDirectory(prefix="errkb-models-") as volume:
        _volume(volume)
        _read(module, volume)


def fix(module: ModuleType, _device: str) -> dict:
    """--model /models/Qwen2.5-7B-Instruct: the folder that holds config.json."""
    with tempfile.TemporaryDirectory(prefix="errkb-models-") as volume:
        config = _read(module, str(_volume(volume)))
    require(config.model_type == "llama", f"read model_type {config.model_type}")
    require(config.num_hidden_layers == 2, f"read {config.num_hidden_layers} layers")
    return {"config": type(config).__name__, "model_type": config.model_type}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
