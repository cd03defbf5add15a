"""Reproducer for record a830e3eedb3d8df7: "Model architectures {architectures} are not
supported for now. Supported architectures: {all_supported_archs}".

vLLM's model registry resolves the `architectures` of a model's config.json to one of its
implementations. The trigger asks it to inspect `TTLlamaForCausalLM`, the class name of a
hardware vendor's fork (tt-inference-server#494), with the vLLM model implementation
(`--model-impl vllm`, so no Transformers fallback is tried): nothing resolves and the
registry raises, listing what it supports. The fix is the check to run before starting:
the config's architectures are corrected to the class these weights are (`LlamaForCausalLM`)
and the same registry lists it among the architectures it supports.

The fix stops at the registry's list: inspecting a supported architecture imports its model
module in a subprocess (the whole model stack, CUDA kernels included), which this CPU
environment does not have. The model config is a plain object with the fields the lookup
reads (`model_impl`, `convert_type`, `runner_type`): state set directly, not through
ModelConfig.
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "a830e3eedb3d8df7"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.model_executor.models.registry",
    classes=("_ModelRegistry",),
    requirements=True,
)
DEVICES = ("cpu",)
FORK_CLASS = "TTLlamaForCausalLM"
WEIGHTS_CLASS = "LlamaForCausalLM"


def _model_config() -> SimpleNamespace:
    return SimpleNamespace(model_impl="vllm", convert_type="none", runner_type="generate")


def trigger(module: ModuleType, _device: str) -> None:
    """A fork's class name in config.json."""
    module.ModelRegistry.inspect_model_cls([FORK_CLASS], _model_config())


def fix(module: ModuleType, _device: str) -> dict:
    """The class of the weights, which the release implements."""
    config = {"architectures": [FORK_CLASS]}
    supported = set(module.ModelRegistry.get_supported_archs())
    require(FORK_CLASS not in supported, f"{FORK_CLASS} is registered after all")
    config["architectures"] = [WEIGHTS_CLASS]
    missing = [arch for arch in config["architectures"] if arch not in supported]
    require(not missing, f"still unsupported: {missing}")
    return {"architectures": config["architectures"], "supported": len(supported)}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
