"""Reproducer for record 7087d0ce19a5cdec: "CUDA error: device-side assert triggered".

The threads' commonest case: a token id at the vocabulary size fed to an embedding on CUDA.
`index_select`'s kernel asserts `srcIndex < srcSelectDimSize` (its line goes to stderr) and the
next synchronising call raises the CUDA error. A device-side assert breaks this process's CUDA
context for good, so the fix runs in a fresh process (a spawn pool, as the record advises:
restart): the ids checked against the table's size, the lookup done on the GPU.

Needs CUDA: the script declares the cuda device only and is skipped elsewhere; it has not
yet run on a GPU.
"""

import multiprocessing
import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "7087d0ce19a5cdec"
TARGET = Target(
    package="torch", version="2.13.0", module="torch.nn.modules.sparse", classes=("Embedding",)
)
DEVICES = ("cuda",)
VOCABULARY = 10


def lookup(ids: list[int]) -> list[float]:
    """The fixed lookup, in a fresh process: ids checked, then embedded on the GPU."""
    import torch

    table = torch.nn.Embedding(VOCABULARY, 2).to("cuda")
    ids_tensor = torch.tensor(ids, device="cuda")
    if int(ids_tensor.max()) >= table.num_embeddings:
        raise ValueError(f"token id {int(ids_tensor.max())} >= vocabulary {table.num_embeddings}")
    return table(ids_tensor).sum(dim=1).tolist()


def trigger(module: ModuleType, device: str) -> None:
    """An id equal to the vocabulary size; the CUDA error surfaces at the synchronisation."""
    import torch

    table = module.Embedding(VOCABULARY, 2).to(device)
    table(torch.tensor([1, VOCABULARY], device=device))
    torch.cuda.synchronize()


def fix(_module: ModuleType, _device: str) -> dict:
    """Ids within the table, looked up in a fresh process."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        sums = pool.apply(lookup, ([1, VOCABULARY - 1],))
    require(len(sums) == 2, f"the lookup returned {sums}")
    return {"ids": [1, VOCABULARY - 1], "vocabulary": VOCABULARY, "process": "spawned"}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
