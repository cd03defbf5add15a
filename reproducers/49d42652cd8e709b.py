"""Reproducer for record 49d42652cd8e709b: "Cannot find the config file for {quantization}".

While building the engine config, vLLM calls get_quant_config for the method given by
`--quantization`: it reads `quantization_config` from the model's config.json, else looks
in the model folder for the file names the method declares (quant_config.json or
quantize_config.json for AWQ). An unquantised model has neither, and the ValueError names
the method. The trigger is `--quantization awq` on a local folder holding an ordinary Llama
config.json (a full-precision fine-tune, as in the threads). The fix is both ways the record
gives: an AWQ checkpoint whose config.json carries `quantization_config` (quant_method awq,
4 bits, group size 128), and the same unquantised-looking config.json with the checkpoint's
quant_config.json copied back beside it; in both the same call returns the AWQ config
(`AutoAWQConfig`, which the release registers for "awq") with those parameters.

The model's config is read by transformers' AutoConfig from the folder, as vLLM reads it;
ModelConfig and LoadConfig are plain objects holding the attributes get_quant_config reads
(the real ModelConfig resolves and inspects a whole model). Nothing is stubbed:
get_quantization_config imports every method's config class to build its table, and the
release's CPU requirements (compressed-tensors among them) come from the cached environment
(`requirements=True`).
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "49d42652cd8e709b"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.model_executor.model_loader.weight_utils",
    classes=("AutoAWQConfig",),
    requirements=True,
)
DEVICES = ("cpu",)
LLAMA = {
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
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
AUTOAWQ_FILE = {"w_bit": 4, "q_group_size": 128, "zero_point": True, "version": "GEMM"}


def _quant_config(module: ModuleType, files: dict[str, dict]) -> object:
    """get_quant_config for `--quantization awq` on a model folder holding `files`."""
    from transformers import AutoConfig

    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: nothing leaves the machine
    with tempfile.TemporaryDirectory(prefix="errkb-awq-") as folder:
        for name, content in files.items():
            Path(folder, name).write_text(json.dumps(content), encoding="utf-8")
        model_config = SimpleNamespace(
            model=folder,
            revision=None,
            quantization="awq",
            quantization_config=None,
            hf_config=AutoConfig.from_pretrained(folder),
            hf_overrides={},
        )
        return module.get_quant_config(model_config, SimpleNamespace(download_dir=None))


def _awq_state(config: object) -> dict:
    """The AWQ parameters the returned config holds, checked against the checkpoint's."""
    require(type(config).__name__ == "AutoAWQConfig", f"got {type(config).__name__}")
    require(config.weight_bits == 4, f"read {config.weight_bits} bits")
    require(config.group_size == 128, f"read group size {config.group_size}")
    require(config.zero_point is True, f"read zero point {config.zero_point}")
    return {"method": config.get_name(), "bits": config.weight_bits, "group": config.group_size}


def trigger(module: ModuleType, _device: str) -> None:
    """--quantization awq on an unquantised fine-tune."""
    _quant_config(module, {"config.json": LLAMA})


def fix(module: ModuleType, _device: str) -> dict:
    """An AWQ checkpoint, and a checkpoint whose quant_config.json was copied back."""
    in_config = _quant_config(module, {"config.json": {**LLAMA, "quantization_config": AWQ}})
    restored = _quant_config(module, {"config.json": LLAMA, "quant_config.json": AUTOAWQ_FILE})
    return {"config.json": _awq_state(in_config), "quant_config.json": _awq_state(restored)}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
