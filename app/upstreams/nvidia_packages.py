"""The NVIDIA packages a torch release runs on (the CUDA runtime, NCCL), fetched from NVIDIA's
own wheels on the index for the error codes they define.

torch reports a failed CUDA call as `CUDA error: <text>` and a failed NCCL call as `NCCL
error in: ..., <text>, NCCL version ...`, the texts being the runtime's `cudaGetErrorString`
and NCCL's `ncclGetErrorString`. Which releases of them torch was built against is in its
Linux wheel's metadata (`nvidia-cuda-runtime-cu12==12.4.127`, `nvidia-nccl-cu12==2.21.5`,
or since CUDA 13 `cuda-toolkit[cudart]==13.0.3`, whose own metadata names
`nvidia-cuda-runtime==13.0.96.*`), read from the index's metadata file of that wheel (PEP
658) so that the half-gigabyte wheel itself is not fetched. Each package's wheel holds both
the codes (a header) and their texts (a library); only what harvest reads is kept in the
cache, once per torch release: the runtime's `driver_types.h` and `libcudart.so` (2 MB),
NCCL's `nccl.h` and its library's read-only data (a few MB of a 250 MB library).
"""

import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from app.upstreams.elf import rodata_sections, write_rodata
from app.upstreams.package_index import (
    INDEX_TIMEOUT_S,
    _fetch,
    _index_files,
    _index_url,
    _normalized,
    _quiet_pip,
)
from app.upstreams.release_errors import UpstreamError

RELEASE_FILE = "RELEASE"  # the package release a folder's files come from
RUNTIME_HEADER = "driver_types.h"
RUNTIME_LIBRARY = "libcudart.so"
NCCL_HEADER = "nccl.h"
NCCL_RODATA = "libnccl.so.rodata"  # app/upstreams/elf.py's file of its read-only data
_TOOLKIT = "cuda-toolkit"
# The machine whose wheel names the CUDA packages: torch asks for them on Linux x86_64 only.
_LINUX = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64"}
_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class NvidiaPackage:
    """One of NVIDIA's packages torch requires, and what of its wheel is kept."""

    key: str  # its folder in the cache
    distribution: re.Pattern[str]  # its name on the index, any CUDA major's
    toolkit_extra: str  # the cuda-toolkit extra that requires it (CUDA 13 on)
    keep: Callable[[zipfile.ZipFile, Path], None]  # writes what is kept into the folder


def _extract(archive: zipfile.ZipFile, pattern: str, target: Path) -> None:
    """Stream the wheel's member whose name `pattern` finds into `target`."""
    found = next((n for n in archive.namelist() if re.search(pattern, n)), None)
    if found is None:
        raise UpstreamError(f"the wheel holds no file like {pattern!r}")
    with archive.open(found) as source, open(target, "wb") as sink:
        shutil.copyfileobj(source, sink, _COPY_CHUNK)


def _keep_runtime(archive: zipfile.ZipFile, into: Path) -> None:
    _extract(archive, r"/include/driver_types\.h$", into / RUNTIME_HEADER)
    _extract(archive, r"/lib/libcudart\.so\.[\d.]+$", into / RUNTIME_LIBRARY)


def _keep_nccl(archive: zipfile.ZipFile, into: Path) -> None:
    """nccl.h, and the read-only data of the library (a few MB of its 250)."""
    _extract(archive, r"/include/nccl\.h$", into / NCCL_HEADER)
    library = into / ".libnccl.so"
    _extract(archive, r"/lib/libnccl\.so\.[\d.]+$", library)
    write_rodata(rodata_sections(library), into / NCCL_RODATA)
    library.unlink()


CUDA_RUNTIME = NvidiaPackage(
    "cuda-runtime", re.compile(r"nvidia-cuda-runtime(?:-cu\d+)?"), "cudart", _keep_runtime
)
NCCL = NvidiaPackage("nccl", re.compile(r"nvidia-nccl(?:-cu\d+)?"), "nccl", _keep_nccl)


def ensure_package(target: Path, torch_version: str, package: NvidiaPackage) -> Path:
    """`target`, holding what is kept of the package release this torch release requires
    and a file naming that release; fetched when it is not there yet (the caller holds the
    release's lock). An UpstreamError says what could not be found or fetched."""
    if (target / RELEASE_FILE).is_file():
        return target
    with _quiet_pip():
        from pip._internal.network.session import PipSession

    try:
        with _quiet_pip(), PipSession() as session:
            requirement = _required(session, torch_version, package)
            if requirement is None:
                raise UpstreamError(f"torch=={torch_version} requires no {package.key}")
            entry = _newest_wheel(session, requirement)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            try:
                wheel = _fetch(session, entry, tmp / entry["filename"])
                with zipfile.ZipFile(wheel) as archive:
                    package.keep(archive, tmp)
                wheel.unlink()
                name, version, *_ = parse_wheel_filename(entry["filename"])
                (tmp / RELEASE_FILE).write_text(f"{name}=={version}\n")
                shutil.rmtree(target, ignore_errors=True)
                tmp.rename(target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # requests': OSErrors
        raise UpstreamError(f"the {package.key} of torch=={torch_version}: {exc}") from exc
    return target


def package_release(folder: Path) -> str:
    """`nvidia-cuda-runtime==13.0.96`: the package release a folder's files come from."""
    return (folder / RELEASE_FILE).read_text().strip()


def _required(session: Any, torch_version: str, package: NvidiaPackage) -> Requirement | None:
    """The package's requirement in torch's Linux wheel, through cuda-toolkit where it goes."""
    torch_wheel = _wheel_entry(session, "torch", lambda version: version == Version(torch_version))
    for requirement in _requirements(_metadata(session, torch_wheel), ""):
        name = _normalized(requirement.name)
        if package.distribution.fullmatch(name):
            return requirement
        if name == _TOOLKIT and package.toolkit_extra in requirement.extras:
            toolkit = _newest_wheel(session, requirement)
            for inner in _requirements(_metadata(session, toolkit), package.toolkit_extra):
                if package.distribution.fullmatch(_normalized(inner.name)):
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
    best: tuple[Version, dict[str, Any]] | None = None
    for entry in _index_files(session, name):
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
