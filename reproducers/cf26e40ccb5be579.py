"""Reproducer for record cf26e40ccb5be579: "Expected there to be {n} prompt updates
corresponding to {n} {modality} items, but instead found {found} prompt updates! ...".

vLLM's multimodal processor asks the model for its prompt updates (`_get_prompt_updates`:
which placeholder token each item's features replace) and binds one update per item passed
in `multi_modal_data` (`_bind_and_group_updates`); in vLLM 0.33.0 `_validate_mm_updates`
refuses a modality whose bound updates do not match its items. The trigger is a video-capable
model implementation whose `_get_prompt_updates` declares only the image replacement, given a
request with one image and one video (the model plugin case): the video gets no update and
the check raises `... 1 video items, but instead found 0 prompt updates!`. The fix declares a
replacement for the video placeholder too: both modalities then bind one update per item and
the check passes.

The two processor methods run unmodified as plain functions: neither reads the processor's
state, and the processor itself needs a model's HuggingFace processor. The updates are the
release's PromptReplacement objects; the placeholder ids are Qwen2-VL's (`<|image_pad|>`
151655, `<|video_pad|>` 151656). Nothing is stubbed; the release's CPU requirements come from
the cached environment (`requirements=True`).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "cf26e40ccb5be579"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.multimodal.processing.processor",
    classes=("BaseMultiModalProcessor", "PromptReplacement"),
    requirements=True,
)
DEVICES = ("cpu",)
IMAGE_PAD, VIDEO_PAD = 151655, 151656
FEATURES = 64  # feature tokens of one item
ITEMS = {"image": 1, "video": 1}


def _validate(module: ModuleType, modalities: dict[str, int]) -> dict:
    """Bind the model's updates to the request's items and validate them, as apply() does."""
    updates = [
        module.PromptReplacement(modality=modality, target=[token], replacement=[token] * FEATURES)
        for modality, token in modalities.items()
    ]
    processor = module.BaseMultiModalProcessor
    bound = processor._bind_and_group_updates(None, updates, ITEMS)
    processor._validate_mm_updates(None, bound, ITEMS)
    return bound


def trigger(module: ModuleType, _device: str) -> None:
    """The model declares the image replacement only; the request also has a video."""
    _validate(module, {"image": IMAGE_PAD})


def fix(module: ModuleType, _device: str) -> dict:
    """A replacement for every modality the processor accepts."""
    bound = _validate(module, {"image": IMAGE_PAD, "video": VIDEO_PAD})
    counts = {modality: len(items) for modality, items in bound.items()}
    require(counts == ITEMS, f"bound updates per modality: {counts}")
    return {"updates": counts}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
