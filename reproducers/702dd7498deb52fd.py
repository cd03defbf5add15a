"""Reproducer for record 702dd7498deb52fd: "{dtype} is not supported for quantization method
{method}. Supported dtypes: {supported}".

While the engine config is built, `VllmConfig._get_quantization_config` builds the quantization
method's config from the checkpoint (`get_quant_config`, the release's real MXFP4 config
here), checks the GPU's compute capability (a CPU platform has none to check) and refuses a
model dtype outside the method's activation dtypes. The trigger is gpt-oss's MXFP4 checkpoint
with `--dtype float16`, as on GPUs without bfloat16 (the MI50 thread): MXFP4 computes in
bfloat16 only. The fix passes the dtype the method lists: the same checkpoint gets its
quantization config.

The model config is a plain object holding what the method reads (the method name, the
dtype, the HF config's quantization_config, the model name and revision); building a real
ModelConfig would download gpt-oss's config. vllm.v1.request's Request is stubbed: the config
package's import chain reaches it; the check never uses it.
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "702dd7498deb52fd"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.config.vllm",
    classes=("VllmConfig",),
    stubs={"vllm.v1.request": ("Request",)},
    requirements=True,
    package_inits=True,
)
DEVICES = ("cpu",)
CHECKPOINT = {"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]}


def _quantization_config(module: ModuleType, dtype: object) -> object:
    """gpt-oss-20b's quantization, resolved for the given model dtype."""
    model_config = SimpleNamespace(
        quantization="mxfp4",
        quantization_config=None,  # no online quantization arguments
        dtype=dtype,
        hf_config=SimpleNamespace(quantization_config=dict(CHECKPOINT)),
        hf_overrides={},
        model="openai/gpt-oss-20b",
        revision=None,
    )
    return module.VllmConfig._get_quantization_config(model_config, SimpleNamespace())


def trigger(module: ModuleType, _device: str) -> None:
    """--dtype float16 for an MXFP4 checkpoint."""
    import torch

    _quantization_config(module, torch.float16)


def fix(module: ModuleType, _device: str) -> dict:
    """--dtype bfloat16, the dtype MXFP4 lists."""
    import torch

    config = _quantization_config(module, torch.bfloat16)
    supported = config.get_supported_act_dtypes()
    require(config.get_name() == "mxfp4", f"got the {config.get_name()} config")
    require(torch.bfloat16 in supported, f"MXFP4 computes in {supported}")
    return {"method": config.get_name(), "supported": [str(d) for d in supported]}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
