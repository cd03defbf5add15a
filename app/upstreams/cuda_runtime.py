"""The CUDA runtime a torch release runs on, fetched from NVIDIA's own wheel on the index.

torch reports a failed CUDA call as `CUDA error: <text>` (c10/cuda/CUDAException.cpp), the
text being the runtime's `cudaGetErrorString`. Which runtime a release was built against is
in its Linux wheel's metadata (`nvidia-cuda-runtime-cu12==12.4.127`, or since CUDA 13
`cuda-toolkit[cudart]==13.0.3`, whose own metadata names `nvidia-cuda-runtime==13.0.96.*`),
read from the index's metadata file of that wheel (PEP 658) so that the half-gigabyte wheel
itself is not fetched. The runtime's wheel (2 MB) holds both what each error code means (the
doc comments of `include/driver_types.h`) and its text (`lib/libcudart.so.*`): those two
files are kept in the cache, once per torch release, and app/harvest/cuda_errors.py reads
them.
"""

import io
import re
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from app.upstreams.package_index import (
    INDEX_TIMEOUT_S,
    SIMPLE_JSON,
    _fetch,
    _index_url,
    _normalized,
    _quiet_pip,
)
from app.upstreams.release_errors import UpstreamError

RUNTIME_FILE = "RUNTIME"  # the runtime release the folder's files come from
HEADER = "driver_types.h"
LIBRARY = "libcudart.so"
_RUNTIME = re.compile(r"nvidia-cuda-runtime(?:-cu\d+)?")
_TOOLKIT = "cuda-toolkit"
_TOOLKIT_EXTRA = "cudart"
# The machine whose wheel names the CUDA packages: torch asks for them on Linux x86_64 only.
_LINUX = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64"}


def ensure_runtime(target: Path, torch_version: str) -> Path:
    """`target`, holding the CUDA runtime's header and library for this torch release and a
    file naming the runtime release; fetched when it is not there yet (the caller holds the
    release's lock). An UpstreamError says what could not be found or fetched."""
    if (target / RUNTIME_FILE).is_file():
        return target
    with _quiet_pip():
        from pip._internal.network.session import PipSession

    try:
        with _quiet_pip(), PipSession() as session:
            runtime = _runtime_requirement(session, torch_version)
            if runtime is None:
                raise UpstreamError(f"torch=={torch_version} names no CUDA runtime")
            entry = _newest_wheel(session, runtime)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            try:
                wheel = _fetch(session, entry, tmp / entry["filename"])
                _keep_runtime_files(wheel, tmp)
                wheel.unlink()
                name, version, *_ = parse_wheel_filename(entry["filename"])
                (tmp / RUNTIME_FILE).write_text(f"{name}=={version}\n")
                shutil.rmtree(target, ignore_errors=True)
                tmp.rename(target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:  # requests' errors are OSErrors
        raise UpstreamError(f"the CUDA runtime of torch=={torch_version}: {exc}") from exc
    return target


def runtime_release(folder: Path) -> str:
    """`nvidia-cuda-runtime==13.0.96`: the runtime release a folder's files come from."""
    return (folder / RUNTIME_FILE).read_text().strip()


def _runtime_requirement(session: Any, torch_version: str) -> Requirement | None:
    """The runtime requirement of torch's Linux wheel, through cuda-toolkit where it goes."""
    torch_wheel = _wheel_entry(session, "torch", lambda version: version == Version(torch_version))
    for requirement in _requirements(_metadata(session, torch_wheel), ""):
        if _RUNTIME.fullmatch(_normalized(requirement.name)):
            return requirement
        if _normalized(requirement.name) == _TOOLKIT and _TOOLKIT_EXTRA in requirement.extras:
            toolkit = _newest_wheel(session, requirement)
            for inner in _requirements(_metadata(session, toolkit), _TOOLKIT_EXTRA):
                if _RUNTIME.fullmatch(_normalized(inner.name)):
                    return inner
    return None


def _requirements(metadata: str, extra: str) -> list[Requirement]:
    """The Requires-Dist lines of a wheel's metadata that apply on Linux x86_64 (with
    `extra` asked for), parsed."""
    found = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            requirement = Requirement(line.partition(":")[2].strip())
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate(_LINUX | {"extra": extra}):
            found.append(requirement)
    return found


def _newest_wheel(session: Any, requirement: Requirement) -> dict[str, Any]:
    return _wheel_entry(session, requirement.name, requirement.specifier.contains)


def _wheel_entry(session: Any, name: str, wanted: Any) -> dict[str, Any]:
    """The index's entry of the newest wanted release's wheel for Linux x86_64 (or for any
    platform), without a local version (`+cpu` builds name no CUDA package)."""
    response = session.get(
        f"{_index_url()}/{_normalized(name)}/",
        headers={"Accept": SIMPLE_JSON},
        timeout=INDEX_TIMEOUT_S,
    )
    response.raise_for_status()
    best: tuple[Version, dict[str, Any]] | None = None
    for entry in response.json().get("files", []):
        try:
            _, version, _, tags = parse_wheel_filename(entry.get("filename", ""))
        except (InvalidWheelFilename, InvalidVersion):
            continue
        platforms = {tag.platform for tag in tags}
        linux = any(p.startswith("manylinux") and p.endswith("x86_64") for p in platforms)
        if version.local or not (linux or platforms == {"any"}) or not wanted(version):
            continue
        if best is None or version > best[0]:
            best = (version, entry)
    if best is None:
        raise UpstreamError(f"no Linux x86_64 wheel of {name} on {_index_url()}")
    return best[1]


def _metadata(session: Any, entry: dict[str, Any]) -> str:
    """A wheel's METADATA, from the index's file beside it (PEP 658)."""
    response = session.get(entry["url"] + ".metadata", timeout=INDEX_TIMEOUT_S)
    response.raise_for_status()
    return str(response.text)


def _keep_runtime_files(wheel: Path, into: Path) -> None:
    """The header and the shared library of the runtime's wheel, written under `into`."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        header = next((n for n in names if n.endswith("/include/" + HEADER)), None)
        library = next((n for n in names if re.search(r"/lib/libcudart\.so\.[\d.]+$", n)), None)
        if header is None or library is None:
            raise UpstreamError(f"{wheel.name} holds no {HEADER} or {LIBRARY}")
        (into / HEADER).write_bytes(archive.read(header))
        with archive.open(library) as source, open(into / LIBRARY, "wb") as target:
            shutil.copyfileobj(source, target, io.DEFAULT_BUFFER_SIZE * 64)
