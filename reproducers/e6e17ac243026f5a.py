"""Reproducer for record e6e17ac243026f5a: "Unknown quantization method: {quantization}. Must be
one of {supported_quantization}.".

`ModelConfig._verify_quantization` (run by `ModelConfig.__post_init__`, so by every engine
start) resolves the quantization method from the `quantization` argument and the checkpoint's
`quantization_config`, then refuses a name that is not in
`vllm.model_executor.layers.quantization.QUANTIZATION_METHODS`. The trigger is a launch
script written for an older vLLM that quantized an unquantized checkpoint in flight with
`quantization="bitsandbytes"`: vLLM 0.33.0 no longer registers that method (0.14.1 did), so
the name is unknown. The extra scenario is a tool's alias, `quantization="int4"`. The fix
takes a method the installed release registers for in-flight quantization, `fp8`, after
checking it against QUANTIZATION_METHODS: the same check then passes, and the platform check
after it too.

The ModelConfig is made with `ModelConfig.__new__` and given only what the check reads: the
argument, the checkpoint's (absent) quantization_config in its architecture config, and
`allow_deprecated_quantization` (state set directly, not through the constructor, which
inspects the model class in a subprocess importing the whole model stack).
vllm.v1.request's Request is stubbed: the config package's import chain reaches it (and the
structured-output backends behind it); the check never uses it.
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "e6e17ac243026f5a"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.config.model",
    classes=("ModelConfig",),
    stubs={"vllm.v1.request": ("Request",)},
    requirements=True,
)
DEVICES = ("cpu",)


def _model_config(module: ModuleType, quantization: str | None) -> object:
    """The state `_verify_quantization` reads, for an unquantized checkpoint."""
    model_config = module.ModelConfig.__new__(module.ModelConfig)
    model_config.quantization = quantization
    model_config.model_arch_config = SimpleNamespace(quantization_config=None)
    model_config.hf_config = SimpleNamespace(model_type="llama")
    model_config.allow_deprecated_quantization = False
    return model_config


def trigger(module: ModuleType, _device: str) -> None:
    """In-flight bitsandbytes quantization, as older releases offered it."""
    _model_config(module, "bitsandbytes")._verify_quantization()


def trigger_alias(module: ModuleType, _device: str) -> None:
    """A tool's own name for 4-bit weights."""
    _model_config(module, "int4")._verify_quantization()


def fix(module: ModuleType, _device: str) -> dict:
    """A method the installed release registers, checked before the engine starts."""
    from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS

    wanted = "fp8"  # in-flight FP8 weight quantization
    require(wanted in QUANTIZATION_METHODS, f"{wanted} is not registered")
    require("bitsandbytes" not in QUANTIZATION_METHODS, "bitsandbytes is registered again")
    model_config = _model_config(module, wanted)
    model_config._verify_quantization()
    require(model_config.quantization == wanted, f"resolved to {model_config.quantization}")
    return {"quantization": model_config.quantization, "registered": len(QUANTIZATION_METHODS)}


if __name__ == "__main__":
    sys.exit(
        main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"alias": trigger_alias})
    )
