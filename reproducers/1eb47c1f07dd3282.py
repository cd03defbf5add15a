"""Reproducer for record 1eb47c1f07dd3282: "max_tokens must be at least 1, got {max_tokens}.".

SamplingParams validates itself on construction (`__post_init__` calls `_verify_args`), and
refuses a max_tokens below 1; in vLLM 0.33.0 it raises VLLMValidationError, whose text adds
`(parameter=max_tokens, value=N)`. The trigger is what a client does when it computes the
output budget as `max_model_len - prompt_tokens` for a prompt that already fills the
context (the threads' `got -344`); the extra scenario is an explicit `max_tokens=0`. The fix
keeps the prompt's most recent tokens inside the context, leaving room for the output, and
clamps the budget to at least 1: the same construction then validates.

Nothing is stubbed: vllm.sampling_params imports vllm.config and the tokenizer registry for
real, with what it imports at load (found from its code, at the versions the release asks for)
from the cached environment that `errkb verify --generated` installs.
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "1eb47c1f07dd3282"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.sampling_params",
    classes=("SamplingParams",),
    requirements=True,
)
DEVICES = ("cpu",)
MAX_MODEL_LEN = 4096  # the served --max-model-len
PROMPT_TOKENS = 4440  # a chat history that outgrew it
RESERVED_FOR_OUTPUT = 512


def trigger(module: ModuleType, _device: str) -> None:
    """The budget a client derives from a prompt longer than the context: -344."""
    module.SamplingParams(max_tokens=MAX_MODEL_LEN - PROMPT_TOKENS)


def trigger_zero(module: ModuleType, _device: str) -> None:
    """An explicit max_tokens of 0."""
    module.SamplingParams(max_tokens=0)


def fix(module: ModuleType, _device: str) -> dict:
    """Keep the prompt inside the context, then clamp the budget to at least 1."""
    prompt = list(range(PROMPT_TOKENS))[-(MAX_MODEL_LEN - RESERVED_FOR_OUTPUT) :]
    budget = max(1, MAX_MODEL_LEN - len(prompt))
    params = module.SamplingParams(max_tokens=budget)
    require(params.max_tokens == RESERVED_FOR_OUTPUT, f"max_tokens is {params.max_tokens}")
    require(len(prompt) + params.max_tokens <= MAX_MODEL_LEN, "prompt and output overflow")
    return {"prompt_tokens": len(prompt), "max_tokens": params.max_tokens}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix, extra_triggers={"zero": trigger_zero}))
