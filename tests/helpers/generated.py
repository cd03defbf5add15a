"""Real upstream files harvested into a test's store, for the generated reproducers' tests:
one file each, copied from the real release at its path (torch from the installed release
the reproducers pin, vLLM from its unpacked release)."""

import importlib.metadata
import shutil
from pathlib import Path

from sqlalchemy import Engine

from app.config import Settings
from app.harvest import drafts
from app.store.engine import open_store, unit_of_work
from tests.helpers.releases import RELEASES

VLLM_SAMPLING = ("vllm", "0.33.0", "vllm/sampling_params.py", "vllm-project/vllm")
TORCH_SGD = ("torch", "2.13.0", "torch/optim/sgd.py", "pytorch/pytorch")


def _release_root(package: str, version: str) -> Path:
    if package == "torch":
        return Path(str(importlib.metadata.distribution("torch").locate_file("")))
    return RELEASES.ensure_unpacked(package, version)


def harvested_store(
    settings: Settings, tmp_path: Path, *files: tuple[str, str, str, str]
) -> Engine:
    """The test's store with the drafts of these files, harvested as source folders of
    their release's tag (`pytorch/pytorch@v2.13.0`)."""
    engine = open_store(settings)
    for package, version, file_path, repo in files:
        folder = tmp_path / f"{package}-src"
        (folder / file_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_release_root(package, version) / file_path, folder / file_path)
        release = drafts.resolve_release(str(folder), repo=repo, ref=f"v{version}")
        with unit_of_work(engine) as session:
            drafts.harvest_release(session, release)
    return engine
