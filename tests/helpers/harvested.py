"""A small real harvest: one file of vLLM 0.33.0, copied from its unpacked release."""

import shutil
from pathlib import Path

from sqlmodel import Session

from app.harvest import drafts
from tests.helpers.releases import RELEASES

UPSTREAM_FILE = "vllm/distributed/device_communicators/shm_object_storage.py"
REPO, REF = "vllm-project/vllm", "v0.33.0"
# Drafts of that file (ids are stable: repo, path, function, template).
KEY_EXISTS = "df4f5b411ce3c056"  # ValueError: Key '{key}' already exists in the storage.
OBJECT_TOO_BIG = "8859b41c46b5ee2e"  # ValueError: Serialized object size ({buffer_size} ...
NO_SPACE = "5c72e2f1cc5fd8d6"  # MemoryError: Not enough space in the data buffer, ...
# (NO_SPACE is the site of seed record b6bab2e17ae18394: with data/ imported, it is claimed.)
NO_LOCK = "96f76af7f6d5c61b"  # ValueError: Lock must be provided for readers.


def release_folder(tmp_path: Path) -> Path:
    """A source folder holding the real upstream file at its path in the release."""
    source = RELEASES.ensure_unpacked("vllm", "0.33.0") / UPSTREAM_FILE
    folder = tmp_path / "vllm-src"
    (folder / UPSTREAM_FILE).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, folder / UPSTREAM_FILE)
    return folder


def harvest_into(session: Session, tmp_path: Path) -> None:
    """Harvest that file's raise sites into the store as drafts."""
    release = drafts.resolve_release(str(release_folder(tmp_path)), repo=REPO, ref=REF)
    drafts.harvest_release(session, release)
