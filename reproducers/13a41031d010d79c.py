"""Reproducer for record 13a41031d010d79c: "As of transformers v4.44, default chat template is
no longer allowed, so you must provide a chat template if the tokenizer does not define one.".

vLLM's chat path formats the messages with `apply_hf_chat_template`, which asks
`resolve_hf_chat_template` for a template: the one given with the request or the server, the
AutoProcessor's, the tokenizer's own, then a fallback vLLM ships for a few model types. The
trigger is a base model's tokenizer (an OPT-like local folder whose tokenizer_config.json
holds no chat_template) and a chat request without a template: every source is empty and
vLLM 0.12.0 raises the ValueError. The fix passes a template explicitly, as
`--chat-template` or `LLM.chat(chat_template=...)` do: the same conversation is rendered.

The tokenizer is a real transformers PreTrainedTokenizerFast over a small word-level
vocabulary, saved to and loaded from a local folder (so the processor lookup reads it and
finds no processor, offline); the model config is a plain object holding the four settings
the resolution reads (trust_remote_code, the model type, the tokenizer path).
"""

import os
import sys
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.kit import Target, main, require

RECORD_ID = "13a41031d010d79c"
TARGET = Target(
    package="vllm",
    version="0.12.0",
    module="vllm.entrypoints.chat_utils",
    classes=(),
    requirements=True,
)
DEVICES = ("cpu",)
CONVERSATION = [{"role": "user", "content": "Hello"}]
TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}assistant:"
)


def _tokenizer(folder: str) -> object:
    """A base model's tokenizer, saved without a chat template and loaded from its folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "user": 3, "Hello": 4, "assistant": 5}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    tokenizer.save_pretrained(folder)
    return PreTrainedTokenizerFast.from_pretrained(folder)


def _render(module: ModuleType, chat_template: str | None) -> str:
    os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder: nothing to download
    with tempfile.TemporaryDirectory(prefix="errkb-tokenizer-") as folder:
        tokenizer = _tokenizer(folder)
        require(tokenizer.chat_template is None, "the base tokenizer has a chat template")
        model_config = SimpleNamespace(
            trust_remote_code=False,
            hf_config=SimpleNamespace(model_type="opt"),
            tokenizer=folder,
        )
        return module.apply_hf_chat_template(
            tokenizer, CONVERSATION, chat_template, None, model_config=model_config
        )


def trigger(module: ModuleType, _device: str) -> None:
    """A chat request to a base model, no template anywhere."""
    _render(module, None)


def fix(module: ModuleType, _device: str) -> dict:
    """The template given explicitly (`--chat-template`)."""
    prompt = _render(module, TEMPLATE)
    require(prompt == "user: Hello\nassistant:", f"rendered {prompt!r}")
    return {"prompt": prompt}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
