"""Reproducer for record 563581060cacef04: "{model_class_name} does not support LoRA yet.".

With `--enable-lora`, the V1 GPU model runner hands the loaded model to
`LoRAModelRunnerMixin.load_lora_model`, whose first step is `supports_lora(model)`: the model
class must implement vLLM's `SupportsLoRA` interface (`supports_lora = True`,
`packed_modules_mapping`, `embedding_modules`). The trigger is a model class without it, as
vLLM's classes for architectures that have no LoRA support yet are: the mixin raises the
ValueError before any adapter is read. The fix is the class with vLLM's `SupportsLoRA` among its
bases, as vLLM's LoRA-capable models declare it: the guard runs and passes, and the mixin goes on to
build its LoRA manager (which needs a whole engine config; what it raises then is reported in
the fix's state, not hidden).

Both scenarios check where the error comes from (`harness.GuardedSite`): the trigger must be raised
by the record's statement, the fix must run the guard without reaching it.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import GuardedSite, Target, fix_scenario, main, trigger_scenario

RECORD_ID = "563581060cacef04"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.v1.worker.lora_model_runner_mixin",
    classes=("LoRAModelRunnerMixin",),
    requirements=True,
)
DEVICES = ("cpu",)
SITE = GuardedSite(function="load_lora_model", raise_line=50, guard_lines=(49, 49))


def _load(module: ModuleType, declares_lora: bool) -> object:
    """Load LoRA support into a small causal LM, as the runner does under --enable-lora."""
    import torch
    from torch import nn

    class TinyForCausalLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed_tokens = nn.Embedding(16, 8)
            self.lm_head = nn.Linear(8, 16, bias=False)

    model_cls = TinyForCausalLM
    if declares_lora:
        from vllm.model_executor.models.interfaces import SupportsLoRA

        model_cls = type(
            "TinyForCausalLM",
            (TinyForCausalLM, SupportsLoRA),
            {
                "packed_modules_mapping": {},
                "embedding_modules": {"embed_tokens": "input_embeddings"},
                "lora_manager": None,
            },
        )
    runner = module.LoRAModelRunnerMixin()
    return runner.load_lora_model(model_cls(), None, torch.device("cpu"))


def _without_interface(module: ModuleType, _device: str) -> object:
    """A model class that does not implement SupportsLoRA."""
    return _load(module, declares_lora=False)


def _with_interface(module: ModuleType, _device: str) -> object:
    """The same model with the SupportsLoRA interface declared."""
    return _load(module, declares_lora=True)


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger_scenario(SITE, _without_interface),
            fix_scenario(SITE, _with_interface, "load_lora_model(model declaring SupportsLoRA)"),
        )
    )
