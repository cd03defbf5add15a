"""Reproducer for record 15f63fcf1b6cd286: "index out of range in self".

Raised in C++ (index_select's bounds check on CPU); nn.Embedding reaches it when an input id
is not below num_embeddings. The trigger is a vocabulary that grew (tokens added) while the
embedding kept its old size; the extra scenario is a sequence longer than the position
embedding table. The fix sizes the embedding from the vocabulary, one row per id, and every
id is embedded.

Runs on the installed torch, which must be the pinned release (see app/upstreams/release_cache.py).
"""

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "15f63fcf1b6cd286"
TARGET = Target(
    package="torch", version="2.13.0", module="torch.nn.modules.sparse", classes=("Embedding",)
)
DEVICES = ("cpu",)
VOCAB = ["<pad>", "<unk>", "the", "cat", "sat", "<new_token>"]  # the last one added later


def _ids() -> object:
    import torch

    return torch.tensor([[2, 3, 4, 5]])


def trigger(module: ModuleType, _device: str) -> None:
    """The embedding sized for the vocabulary before a token was added."""
    module.Embedding(len(VOCAB) - 1, 8)(_ids())


def trigger_long_sequence(module: ModuleType, _device: str) -> None:
    """Position ids past a table of 4 positions."""
    import torch

    module.Embedding(4, 8)(torch.arange(6).unsqueeze(0))


def fix(module: ModuleType, _device: str) -> dict:
    """One row per id of the vocabulary."""
    embedding = module.Embedding(len(VOCAB), 8)
    ids = _ids()
    require(int(ids.max()) < embedding.num_embeddings, "an id is past the table")
    out = embedding(ids)
    require(tuple(out.shape) == (1, 4, 8), f"embedded shape {tuple(out.shape)}")
    return {"num_embeddings": embedding.num_embeddings, "max_id": int(ids.max())}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger,
            fix,
            extra_triggers={"long_sequence": trigger_long_sequence},
        )
    )
