"""The package index client of the release cache: the names of a release's files, the index
pip is configured with, and one file fetched from it with its sha256 checked.

Files are fetched with pip's own client (`pip download`, pip's network session), never by
building anything: building an sdist would run upstream code here.
"""

import hashlib
import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app import upstreams
from app.upstreams.release_errors import UpstreamError

DEFAULT_INDEX = "https://pypi.org/simple"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"  # PEP 691
INDEX_TIMEOUT_S = 60
DOWNLOAD_CHUNK = 1 << 20
PIP_TIMEOUT_S = 600


def _platform_options(name: str) -> list[str]:
    """pip's options for the wheel whose sources stand for every platform's, where the
    project names one (`UpstreamProject.sources_platform`)."""
    project = upstreams.BY_PACKAGE.get(name)
    if project is None or project.sources_platform is None:
        return []
    return ["--platform", project.sources_platform]


def _release(name: str, version: str) -> str:
    return f"{name}-{version}"


def _find_wheel(folder: Path, name: str, version: str) -> Path | None:
    stem = re.sub(r"[-_.]+", "_", name).lower()
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    return found[0] if found else None


def _normalized(name: str) -> str:
    """PEP 503's normal form of a project name: `SGLang_x` -> `sglang-x`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _sdist_name(name: str, version: str) -> str:
    return f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}.tar.gz"


def _platform_wheel(
    files: list[dict[str, Any]], name: str, version: str, platform: re.Pattern[str]
) -> dict[str, Any] | None:
    """The index entry of the release's wheel for a platform tag `platform` matches, this
    interpreter's where there is one (any other CPython's carries the same libraries); a
    wheel with a local version (`2.13.0+cpu`, another build) is never it."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    shape = re.compile(
        rf"{re.escape(stem)}-{re.escape(version)}(?:-\d[^-]*)?-([^-]+)-[^-]+-([^-]+)\.whl"
    )
    ours = f"cp{sys.version_info.major}{sys.version_info.minor}"
    found: list[tuple[bool, str, dict[str, Any]]] = []
    for entry in files:
        filename = str(entry.get("filename", ""))
        parts = shape.fullmatch(filename.lower())
        if parts and any(platform.fullmatch(tag) for tag in parts.group(2).split(".")):
            found.append((ours not in parts.group(1).split("."), filename, entry))
    return min(found, key=lambda item: item[:2])[2] if found else None


def _find_sdist(folder: Path, name: str, version: str) -> Path | None:
    path = folder / _sdist_name(name, version)
    return path if path.is_file() else None


@contextmanager
def _quiet_pip() -> Iterator[None]:
    """pip's internals import its vendored pkg_resources, which warns that it is deprecated:
    pip's business, not this service's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _index_url() -> str:
    """The index pip is configured with (PIP_INDEX_URL, pip.conf), else PyPI's."""
    with _quiet_pip():
        from pip._internal.configuration import Configuration, ConfigurationError

    try:
        configuration = Configuration(isolated=False)
        configuration.load()
        found = [value for key, value in configuration.items() if key.endswith(".index-url")]
    except ConfigurationError:
        found = []
    urls = [url for url in found if url.startswith(("https://", "http://"))]
    return (urls[-1] if urls else DEFAULT_INDEX).rstrip("/")


def _index_files(session: Any, name: str) -> list[dict[str, Any]]:
    """A project's files on the index pip is configured with, from its JSON API (PEP 691),
    the way pip finds them."""
    response = session.get(
        f"{_index_url()}/{_normalized(name)}/",
        headers={"Accept": SIMPLE_JSON},
        timeout=INDEX_TIMEOUT_S,
    )
    response.raise_for_status()
    files: list[dict[str, Any]] = response.json().get("files", [])
    return files


def _fetch(session: Any, entry: dict[str, Any], target: Path) -> Path:
    """Download one index file to ``target`` (atomically), checking its sha256."""
    digest = hashlib.sha256()
    tmp = target.with_name(f".{target.name}.part")
    with session.get(entry["url"], stream=True, timeout=PIP_TIMEOUT_S) as response:
        response.raise_for_status()
        with open(tmp, "wb") as handle:
            for chunk in response.iter_content(DOWNLOAD_CHUNK):
                digest.update(chunk)
                handle.write(chunk)
    expected = entry.get("hashes", {}).get("sha256")
    if expected and digest.hexdigest() != expected:
        tmp.unlink(missing_ok=True)
        raise UpstreamError(f"{target.name}: sha256 {digest.hexdigest()} is not {expected}")
    tmp.rename(target)
    return target
