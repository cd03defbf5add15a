"""Reproducer for record 9f776f0c73e4b7ca: "Quantization method specified in the model config
({quant_method}) does not match the quantization method specified in the `quantization`
argument ({quantization}).".

`ModelConfig._verify_quantization` (run by `ModelConfig.__post_init__`, so by every engine
start) reads `quant_method` from the checkpoint's `quantization_config`, lets every registered
method claim the checkpoint through `override_quantization_method` (the real quantization
configs of the release, which is how a GPTQ checkpoint gets the AutoGPTQ/Marlin path without
a flag), and raises when the `quantization` argument still names something else. The trigger
is a GPTQ checkpoint started with a flag copied from an AWQ model's launch script,
`quantization="awq"`; the extra scenario is a GGUF conversion whose config.json kept the
original model's `fp8` block, started with `quantization="gguf"` (the vllm#19050 thread).
The fix leaves the flag out: the checkpoint's own method is resolved and taken.

The ModelConfig is made with `ModelConfig.__new__` and given only what the check reads: the
argument, the checkpoint's quantization_config in its architecture config, its HF config's
model type and `allow_deprecated_quantization` (state set directly, not through the
constructor, which inspects the model class in a subprocess importing the whole model stack).
vllm.v1.request's Request is stubbed: the config package's import chain reaches it (and the
structured-output backends behind it); the check never uses it.
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "9f776f0c73e4b7ca"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.config.model",
    classes=("ModelConfig",),
    stubs={"vllm.v1.request": ("Request",)},
    requirements=True,
)
DEVICES = ("cpu",)
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}
FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}


def _model_config(module: ModuleType, quantization: str | None, checkpoint: dict) -> object:
    """The state `_verify_quantization` reads, for a checkpoint declaring `checkpoint`."""
    model_config = module.ModelConfig.__new__(module.ModelConfig)
    model_config.quantization = quantization
    model_config.model_arch_config = SimpleNamespace(quantization_config=dict(checkpoint))
    model_config.hf_config = SimpleNamespace(model_type="llama")
    model_config.allow_deprecated_quantization = False
    return model_config


def trigger(module: ModuleType, _device: str) -> None:
    """A GPTQ checkpoint with --quantization awq."""
    _model_config(module, "awq", GPTQ)._verify_quantization()


def trigger_gguf(module: ModuleType, _device: str) -> None:
    """A config.json that kept the original model's fp8 block, with --quantization gguf."""
    _model_config(module, "gguf", FP8)._verify_quantization()


def fix(module: ModuleType, _device: str) -> dict:
    """No --quantization: the checkpoint's method is resolved and taken."""
    model_config = _model_config(module, None, GPTQ)
    model_config._verify_quantization()
    resolved = model_config.quantization
    require(resolved is not None and "gptq" in resolved, f"resolved to {resolved}")
    return {"checkpoint": GPTQ["quant_method"], "quantization": resolved}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"gguf": trigger_gguf}))
