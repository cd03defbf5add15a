"""Accuracy on real errors: harvest the installed torch, trigger real errors by
calling torch's Python APIs on CPU with bad arguments, and check that /api/match's top
result points at the file and line that raised each one (the traceback's last frame)."""

import io
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.helpers import accuracy

torch = pytest.importorskip("torch", reason="torch comes with the reproducers extra")
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset, random_split  # noqa: E402

pytestmark = pytest.mark.network  # downloads from the package index

TOP1_GOAL = 0.95


def _params() -> list:
    return [torch.zeros(2, requires_grad=True)]


def _child_fails(rank: int) -> None:
    raise RuntimeError(f"worker {rank} failed on purpose")


def _sgd(**kwargs) -> torch.optim.Optimizer:
    return torch.optim.SGD(_params(), lr=0.1, **kwargs)


TRIGGERS: dict[str, Callable[[], object]] = {
    "sgd learning rate": lambda: torch.optim.SGD(_params(), lr=-1),
    "sgd momentum": lambda: _sgd(momentum=-1),
    "sgd weight decay": lambda: _sgd(weight_decay=-1),
    "sgd nesterov": lambda: _sgd(nesterov=True),
    "adam learning rate": lambda: torch.optim.Adam(_params(), lr=-1),
    "adam epsilon": lambda: torch.optim.Adam(_params(), eps=-1),
    "adam beta 0": lambda: torch.optim.Adam(_params(), betas=(2, 0.9)),
    "adam beta 1": lambda: torch.optim.Adam(_params(), betas=(0.9, 2)),
    "adagrad lr decay": lambda: torch.optim.Adagrad(_params(), lr_decay=-1),
    "rmsprop alpha": lambda: torch.optim.RMSprop(_params(), alpha=-1),
    "rmsprop momentum": lambda: torch.optim.RMSprop(_params(), momentum=-1),
    "adadelta rho": lambda: torch.optim.Adadelta(_params(), rho=2),
    "optimizer empty": lambda: torch.optim.SGD([], lr=0.1),
    "optimizer tensor params": lambda: torch.optim.SGD(torch.zeros(2), lr=0.1),
    "scheduler without optimizer": lambda: torch.optim.lr_scheduler.StepLR(object(), 1),
    "scheduler resumed": lambda: torch.optim.lr_scheduler.StepLR(_sgd(), 1, last_epoch=3),
    "one cycle steps": lambda: torch.optim.lr_scheduler.OneCycleLR(_sgd(), max_lr=1.0),
    "cyclic mode": lambda: torch.optim.lr_scheduler.CyclicLR(
        _sgd(momentum=0.9), 0.1, 1.0, mode="bogus"
    ),
    "plateau mode": lambda: torch.optim.lr_scheduler.ReduceLROnPlateau(_sgd(), mode="bogus"),
    "plateau factor": lambda: torch.optim.lr_scheduler.ReduceLROnPlateau(_sgd(), factor=2.0),
    "lambda lr count": lambda: torch.optim.lr_scheduler.LambdaLR(_sgd(), [abs, abs]),
    "swa anneal": lambda: torch.optim.swa_utils.SWALR(_sgd(), 0.1, anneal_strategy="bogus"),
    "conv groups": lambda: nn.Conv2d(3, 4, 3, groups=2),
    "conv padding mode": lambda: nn.Conv2d(3, 3, 3, padding_mode="bogus"),
    "conv padding string": lambda: nn.Conv2d(3, 3, 3, padding="bogus"),
    "conv same strided": lambda: nn.Conv2d(3, 3, 3, padding="same", stride=2),
    "dropout probability": lambda: nn.Dropout(p=2),
    "embedding padding": lambda: nn.Embedding(10, 3, padding_idx=20),
    "attention heads": lambda: nn.MultiheadAttention(10, 3),
    "transformer activation": lambda: nn.TransformerEncoderLayer(8, 2, activation="bogus"),
    "batchnorm input": lambda: nn.BatchNorm1d(3)(torch.zeros(2, 3, 4, 5)),
    "rnn nonlinearity": lambda: nn.RNN(2, 2, nonlinearity="bogus"),
    "lstm dropout": lambda: nn.LSTM(2, 2, dropout=2),
    "module name with dot": lambda: nn.Module().add_module("a.b", nn.Linear(1, 1)),
    "buffer name with dot": lambda: nn.Module().register_buffer("a.b", torch.zeros(1)),
    "parameter not a Parameter": lambda: nn.Module().register_parameter("w", torch.zeros(1)),
    "sequential index": lambda: nn.Sequential(nn.Linear(1, 1))[5],
    "load state dict": lambda: nn.Linear(2, 2).load_state_dict({"weight": torch.zeros(2, 2)}),
    "spectral norm twice": lambda: nn.utils.spectral_norm(nn.utils.spectral_norm(nn.Linear(2, 2))),
    "parametrize missing": lambda: nn.utils.parametrize.register_parametrization(
        nn.Linear(1, 1), "missing", nn.Identity()
    ),
    "interpolate size and scale": lambda: F.interpolate(
        torch.zeros(1, 1, 4), size=2, scale_factor=2.0
    ),
    "cross entropy reduction": lambda: F.cross_entropy(
        torch.zeros(2, 3), torch.zeros(2, dtype=torch.long), reduction="bogus"
    ),
    "dataloader batch size": lambda: DataLoader(TensorDataset(torch.zeros(4)), batch_size=0),
    "dataloader workers": lambda: DataLoader(TensorDataset(torch.zeros(4)), num_workers=-1),
    "dataloader sampler and shuffle": lambda: DataLoader(
        TensorDataset(torch.zeros(4)), shuffle=True, sampler=[0, 1]
    ),
    "dataloader prefetch": lambda: DataLoader(TensorDataset(torch.zeros(4)), prefetch_factor=2),
    "tensor dataset sizes": lambda: TensorDataset(torch.zeros(4), torch.zeros(5)),
    "random split lengths": lambda: random_split(range(10), [3, 3]),
    "distributed without init": lambda: dist.get_rank(),
    "distributed unknown backend": lambda: dist.init_process_group(
        backend="bogus", rank=0, world_size=1, init_method="tcp://127.0.0.1:1"
    ),
    "load not a checkpoint": lambda: torch.load(io.BytesIO(b"not a checkpoint"), weights_only=True),
    "save to an int": lambda: torch.save(torch.zeros(1), 12345),
    "grad scaler growth": lambda: torch.amp.GradScaler("cpu", growth_factor=0.5).unscale_(_sgd()),
    "hub source": lambda: torch.hub.load("a/b", "m", source="bogus"),
    # messages built by factories, module constants, __init__, helpers, run time
    "env rendezvous without RANK": lambda: next(dist.rendezvous("env://")),
    "default_collate of an object": lambda: torch.utils.data.default_collate([object()]),
    "compile with an unknown backend": lambda: torch.compile(nn.Linear(1, 1), backend="bogus"),
    "assert_close multi-line": lambda: torch.testing.assert_close(torch.zeros(2), torch.ones(2)),
    "spawned process raised": lambda: torch.multiprocessing.start_processes(
        _child_fails, nprocs=1, start_method="fork"
    ),
    "vmap in_dims": lambda: torch.func.vmap(lambda x: x, in_dims=(0, 0))(torch.zeros(2)),
}


def real_errors() -> dict[str, accuracy.RealError]:
    """name -> (the real traceback, the file and line that raised it)."""
    os.environ.pop("RANK", None)  # the env:// rendezvous must find it missing
    site = partial(accuracy.raise_site, root=Path(torch.__file__).parent, repo_prefix="torch/")
    return accuracy.trigger_all(TRIGGERS, site)


@pytest.fixture(scope="module")
def torch_client(harvested: accuracy.Harvested) -> TestClient:
    """A service whose store holds the drafts harvested from the installed torch (and the
    other releases of the shared store)."""
    result, counts = harvested.results["torch"]
    assert counts.created > 10_000
    assert result.files > 2_000
    return harvested.client


def test_top_match_points_at_the_raising_line(torch_client: TestClient) -> None:
    errors = real_errors()
    sites = {(path, line) for _, path, line in errors.values()}
    assert len(sites) >= 30, "need at least 30 different raise sites"
    score = accuracy.score(torch_client, errors)
    print("\n" + score.report("torch"))
    assert score.top1_rate >= TOP1_GOAL, score.misses
