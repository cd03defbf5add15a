"""What the release cache unpacks of a release's archive: its Python sources and metadata, or
its C++/CUDA sources apart, each member written alone on a path inside the target; or of a
wheel of compiled libraries, only their read-only data.

Compiled extensions, tests and data are most of an archive, and nothing that reads a release
(a target module, the harvest of raise sites, the drift check) needs them.
"""

import re
import shutil
import tarfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

from app.upstreams.elf import RODATA_SUFFIX, rodata_sections, write_rodata

# Top folders of an sdist that hold no part of the package: half of vLLM's Python files.
SDIST_SKIPPED = frozenset({"tests", "benchmarks", "examples", "docs", "tools", ".buildkite"})
SRC_LAYOUT = "src"  # the folder a src-layout sdist keeps its package in
NATIVE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp")


def _unpack_sdist(sdist: Path, name: str, version: str, into: Path) -> None:
    """The sdist's Python files, without its top folder (nor its tests, benchmarks and
    examples), and its PKG-INFO as the `.dist-info/METADATA` a wheel has (the same core
    metadata), so the tree reads alike. The package's folders that hold no Python file stay,
    empty: a module may check at import that they exist (`sglang.kernels.jit` looks for its
    `include/` and `csrc/`); folders outside the package do not, since an empty folder on the
    path would be imported as a namespace package in place of a real one.

    Members are written one by one: only regular files, on paths inside ``into``."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")[1:]
            if not member.isfile() or not parts or ".." in parts or member.name.startswith("/"):
                continue
            if parts[0] == SRC_LAYOUT and len(parts) > 2:  # src/transformers/...: as in a wheel
                parts = parts[1:]
            relative = "/".join(parts)
            if parts[0] in SDIST_SKIPPED:
                continue
            if relative == "PKG-INFO":
                target = into / f"{stem}-{version}.dist-info" / "METADATA"
            elif relative.endswith(".py"):
                target = into / relative
            else:
                if parts[0] == stem and len(parts) > 2:  # the package's own folder stays
                    (into / relative).parent.mkdir(parents=True, exist_ok=True)
                continue
            source = archive.extractfile(member)
            if source is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())


def _unpack_native(archive: Path, folders: tuple[str, ...], into: Path) -> None:
    """The C++/CUDA files of an sdist (without its top folder) or a wheel under `folders`;
    only regular files, on paths inside ``into``."""

    def write(relative: str, data: bytes) -> None:
        parts = relative.split("/")
        if ".." in parts or relative.startswith("/"):
            return
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def wanted(relative: str) -> bool:
        return relative.startswith(folders) and relative.endswith(NATIVE_SUFFIXES)

    if archive.name.endswith(".tar.gz"):
        with tarfile.open(archive, "r:gz") as sdist:
            for member in sdist:
                relative = member.name.partition("/")[2]
                if member.isfile() and wanted(relative):
                    source = sdist.extractfile(member)
                    if source is not None:
                        write(relative, source.read())
        return
    with zipfile.ZipFile(archive) as wheel:
        for name in wheel.namelist():
            if wanted(name):
                write(name, wheel.read(name))


def _keep_read_only_data(wheel: Path, libraries: Iterable[str], into: Path) -> list[str]:
    """The read-only data of each of `libraries` (paths inside the wheel) that the wheel
    holds, kept at `into/PATH.rodata`; the libraries kept. Each library is streamed to a
    file beside it (a section table lies at its end), read, and deleted: one library at a time
    on the disk, never the whole wheel unpacked. A ValueError, zipfile.BadZipFile or OSError
    says why a wheel or a library could not be read."""
    kept: list[str] = []
    with zipfile.ZipFile(wheel) as archive:
        present = set(archive.namelist())
        for member in libraries:
            parts = member.split("/")
            if member not in present or ".." in parts or member.startswith("/"):
                continue
            target = into / f"{member}{RODATA_SUFFIX}"
            target.parent.mkdir(parents=True, exist_ok=True)
            library = target.with_name(f".{parts[-1]}.part")
            try:
                with archive.open(member) as source, library.open("wb") as copy:
                    shutil.copyfileobj(source, copy, 1 << 20)
                sections = rodata_sections(library)
            finally:
                library.unlink(missing_ok=True)
            write_rodata(sections, target)
            kept.append(member)
    return kept


def _wanted(member: str) -> bool:
    """Python sources and the dist-info: compiled extensions and data are most of a wheel
    and no target module or harvest needs them."""
    top = member.split("/", 1)[0]
    return not member.endswith("/") and (member.endswith(".py") or top.endswith(".dist-info"))


def package_folder(member: str, packages: set[str]) -> str | None:
    """The folder a wheel's member lies in, where it is a subfolder of one of the wheel's
    `packages` (top folders holding Python files) that the unpacked tree keeps, empty, though
    the member (a header, a data file) is left out: a module may check at import that it
    exists. None elsewhere: an empty top folder would be imported as a namespace package."""
    parts = member.split("/")
    if len(parts) < 3 or ".." in parts or member.startswith("/") or parts[0] not in packages:
        return None
    return "/".join(parts[:-1])
