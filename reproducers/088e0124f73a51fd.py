"""Reproducer for record 088e0124f73a51fd: "At most {limit} {modality}(s) may be provided in
one prompt.".

Every multimodal model's processing info checks the number of items of each modality before
its HF processor runs: `BaseProcessingInfo.validate_num_items` takes the smaller of the
model's own maximum (`get_supported_mm_limits`, None for unlimited) and the deployment's
`--limit-mm-per-prompt` (read from a real `MultiModalConfig`) and raises VLLMValidationError
above it. The trigger is a model that takes up to 10 images served with
`--limit-mm-per-prompt '{"image": 1}'` and a chat of three screenshots: the message ends with
the hint to raise the flag. The extra scenarios: a model with no maximum of its own (None,
as Qwen2-VL declares) under the same flag, where vLLM compares with the flag alone and adds
no hint; and a model that itself takes one image, where the flag cannot help. The fix sizes
the limit from the largest request, 4 images: the same three-image prompt then validates.

The processing info is a subclass that only declares the model's limits, as each model's
`*ProcessingInfo` does; its context holds the real MultiModalConfig in place of the model
config's (the check reads nothing else from it), so no model is downloaded.
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "088e0124f73a51fd"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.multimodal.processing.context",
    classes=("BaseProcessingInfo", "InputProcessingContext"),
    requirements=True,
)
DEVICES = ("cpu",)
IMAGES_SENT = 3  # three screenshots in one chat request


def _info(module: ModuleType, limit_per_prompt: dict[str, int], model_max: int | None) -> object:
    """The processing info of a model taking `model_max` images (None: any number), served
    with `--limit-mm-per-prompt` as given."""
    from vllm.config.multimodal import MultiModalConfig

    class ProcessingInfo(module.BaseProcessingInfo):
        def get_supported_mm_limits(self) -> dict[str, int | None]:
            return {"image": model_max}

    mm_config = MultiModalConfig(limit_per_prompt=limit_per_prompt)
    model_config = SimpleNamespace(multimodal_config=mm_config)
    return ProcessingInfo(module.InputProcessingContext(model_config=model_config, tokenizer=None))


def trigger(module: ModuleType, _device: str) -> None:
    """Three images to a server started with --limit-mm-per-prompt '{"image": 1}'."""
    _info(module, {"image": 1}, 10).validate_num_items("image", IMAGES_SENT)


def trigger_unlimited_model(module: ModuleType, _device: str) -> None:
    """The same flag for a model without a maximum of its own: no hint in the message."""
    _info(module, {"image": 1}, None).validate_num_items("image", IMAGES_SENT)


def trigger_model_maximum(module: ModuleType, _device: str) -> None:
    """Three images to a model that takes one, whatever the flag says."""
    _info(module, {"image": 8}, 1).validate_num_items("image", IMAGES_SENT)


def fix(module: ModuleType, _device: str) -> dict:
    """--limit-mm-per-prompt sized from the largest request (4 images)."""
    info = _info(module, {"image": 4}, 10)
    info.validate_num_items("image", IMAGES_SENT)
    allowed = info.allowed_mm_limits["image"]
    require(allowed == 4, f"the limit read from MultiModalConfig is {allowed}")
    require(allowed >= IMAGES_SENT, f"{IMAGES_SENT} images against a limit of {allowed}")
    return {"images": IMAGES_SENT, "allowed": allowed}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={
                "unlimited_model": trigger_unlimited_model,
                "model_maximum": trigger_model_maximum,
            },
        )
    )
