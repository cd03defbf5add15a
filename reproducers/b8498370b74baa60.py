"""Reproducer for record b8498370b74baa60: "LoRA rank {rank} is greater than max_lora_rank {max}.".

vLLM's worker reads an adapter's adapter_config.json into a PEFTHelper and calls
validate_legal(lora_config) before loading its weights; the adapter's largest rank
(`r`, or a larger value in `rank_pattern`) above LoRAConfig.max_lora_rank adds this sentence
to the ValueError it raises. The trigger loads a rank-32 adapter under the default
max_lora_rank of 16, as `vllm serve --enable-lora` without `--max-lora-rank` does; the extra
scenario is a rank-8 adapter whose rank_pattern gives one module rank 64. The fix starts
from the adapter's own rank and picks the smallest value --max-lora-rank accepts that holds
it: the same adapter then validates.

LoRAConfig is stubbed: its module imports vLLM's whole config package (transformers and the
serving stack's dependencies). validate_legal reads only `max_lora_rank` from it, which the
scenario passes as a plain object holding a value the flag accepts.
"""

import json
import sys
import tempfile
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "b8498370b74baa60"
TARGET = Target(
    package="vllm",
    version="0.33.0",
    module="vllm.lora.peft_helper",
    classes=("PEFTHelper",),
    stubs={"vllm.config.lora": ("LoRAConfig",)},
)
DEVICES = ("cpu",)
DEFAULT_MAX_LORA_RANK = 16  # LoRAConfig.max_lora_rank's default in vllm 0.33.0
# MaxLoRARanks in vllm/config/lora.py of 0.33.0: the values --max-lora-rank accepts
ALLOWED_MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
MAX_POSITION_EMBEDDINGS = 4096


def _adapter(module: ModuleType, **config: object) -> object:
    """A PEFT adapter's config as vLLM reads it from its folder."""
    with tempfile.TemporaryDirectory(prefix="errkb-lora-") as folder:
        adapter = {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "lora_alpha": 16,
            "target_modules": ["q_proj", "v_proj"],
            "bias": "none",
            **config,
        }
        Path(folder, "adapter_config.json").write_text(json.dumps(adapter), encoding="utf-8")
        return module.PEFTHelper.from_local_dir(folder, MAX_POSITION_EMBEDDINGS)


def _lora_config(max_lora_rank: int) -> SimpleNamespace:
    require(max_lora_rank in ALLOWED_MAX_LORA_RANKS, f"--max-lora-rank {max_lora_rank} is refused")
    return SimpleNamespace(max_lora_rank=max_lora_rank)


def trigger(module: ModuleType, _device: str) -> None:
    """A rank-32 adapter under the default max_lora_rank."""
    _adapter(module, r=32).validate_legal(_lora_config(DEFAULT_MAX_LORA_RANK))


def trigger_rank_pattern(module: ModuleType, _device: str) -> None:
    """A rank-8 adapter whose rank_pattern gives q_proj rank 64."""
    helper = _adapter(module, r=8, rank_pattern={"q_proj": 64})
    helper.validate_legal(_lora_config(DEFAULT_MAX_LORA_RANK))


def fix(module: ModuleType, _device: str) -> dict:
    """--max-lora-rank from the adapter's own largest rank."""
    helper = _adapter(module, r=32)
    rank = max([helper.r, *helper.rank_pattern.values()])
    max_lora_rank = min(value for value in ALLOWED_MAX_LORA_RANKS if value >= rank)
    helper.validate_legal(_lora_config(max_lora_rank))
    require(max_lora_rank == 32, f"picked --max-lora-rank {max_lora_rank} for rank {rank}")
    scaling = helper.vllm_lora_scaling_factor
    require(scaling == 0.5, f"lora_alpha 16 over rank 32 should scale by 0.5, got {scaling}")
    return {"adapter_rank": rank, "max_lora_rank": max_lora_rank, "scaling": scaling}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"rank_pattern": trigger_rank_pattern},
        )
    )
