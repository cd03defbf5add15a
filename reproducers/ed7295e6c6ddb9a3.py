"""Reproducer for record ed7295e6c6ddb9a3: "The {prompt_type} prompt (length {n}) is longer than
the maximum model length of {max}. {suggestion}".

The engine's InputProcessor checks each request's tokenized prompt against
`model_config.max_model_len` before scheduling it. The trigger is the openrag thread's
request: a 15983-token prompt to a text model served with `--max-model-len 8192`; the fix
keeps the prompt's last tokens, leaving room for the answer, and the same check passes.

The processor is made with `InputProcessor.__new__` and given only what the check reads
(the model config's `max_model_len` and `runner_type`, whether the model takes multimodal
inputs, and the prompt-length flag its constructor sets): state set directly, not through
the constructor, which builds the tokenizer, the renderer and the multimodal budget of a
real model. vllm.v1.request's Request is stubbed: the module imports it (and through it the
structured-output backends, which need xgrammar); the check never uses it.
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "ed7295e6c6ddb9a3"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.v1.engine.input_processor",
    classes=("InputProcessor",),
    stubs={"vllm.v1.request": ("Request",)},
    requirements=True,
)
DEVICES = ("cpu",)
MAX_MODEL_LEN = 8192
PROMPT_TOKENS = 15983
MAX_TOKENS = 512


def _processor(module: ModuleType) -> object:
    processor = module.InputProcessor.__new__(module.InputProcessor)
    processor.model_config = SimpleNamespace(max_model_len=MAX_MODEL_LEN, runner_type="generate")
    processor.supports_mm_inputs = False  # a text model
    processor.skip_prompt_length_check = False  # what __init__ sets for a text model
    return processor


def trigger(module: ModuleType, _device: str) -> None:
    """A 15983-token prompt against --max-model-len 8192."""
    prompt = list(range(PROMPT_TOKENS))
    _processor(module)._validate_prompt_len(len(prompt), "decoder")


def fix(module: ModuleType, _device: str) -> dict:
    """Keep the last tokens that leave room for the answer."""
    prompt = list(range(PROMPT_TOKENS))[-(MAX_MODEL_LEN - MAX_TOKENS) :]
    _processor(module)._validate_prompt_len(len(prompt), "decoder")
    require(len(prompt) + MAX_TOKENS <= MAX_MODEL_LEN, f"{len(prompt)} + {MAX_TOKENS} overflow")
    return {"prompt_tokens": len(prompt), "max_tokens": MAX_TOKENS}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
