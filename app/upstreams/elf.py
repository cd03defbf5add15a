"""A compiled library's read-only data: the `.rodata` sections of an ELF file, and the small
file the release cache keeps of them.

Harvest reads a library's message literals from its read-only data alone
(app/harvest/compiled.py), so the release cache keeps only that of the libraries it takes
from a wheel it does not keep (torch's CUDA build: 9 MB of libtorch_cuda.so's 448 MB). The
kept file is a header, then each section's offset in the library, its size and its bytes:
read back, it gives what the library gave, offsets included.

The ELF reader is a few lines of `struct`: section headers, their names, the `.rodata`
sections. A file that is not a 64-bit little-endian ELF, or either file cut short, is a
ValueError with its reason.
"""

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

Sections = list[tuple[int, bytes]]
"""Read-only data sections: each one's offset in its library, and its bytes."""

RODATA_SUFFIX = ".rodata"  # the kept file of `torch/lib/libtorch_cuda.so` is `...so.rodata`
_ELF_MAGIC = b"\x7fELF"
_DUMP_MAGIC = b"errkb-rodata\x001\n"  # the format's name and version
_SECTION = struct.Struct("<IIQQQQIIQQ")
_DUMPED = struct.Struct("<QQ")  # a kept section's offset and size


@dataclass(frozen=True)
class Section:
    """One section of an ELF file: where it is loaded and where it lies in the file."""

    address: int
    offset: int
    size: int


def section_table(handle: BinaryIO) -> dict[bytes, Section]:
    """The sections of an open ELF file by name; a ValueError when it is no 64-bit
    little-endian ELF or its section headers are cut short."""
    handle.seek(0)
    head = handle.read(64)
    if len(head) < 64 or head[:4] != _ELF_MAGIC or head[4] != 2 or head[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if shentsize != _SECTION.size or not 0 <= shstrndx < shnum:
        raise ValueError("unexpected ELF section headers")
    handle.seek(shoff)
    table = handle.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        raise ValueError("ELF section headers cut short")
    sections = [_SECTION.unpack_from(table, i * shentsize) for i in range(shnum)]
    names = _read(handle, sections[shstrndx][4], sections[shstrndx][5])
    return {
        names[name_at : names.find(b"\0", name_at)]: Section(address, offset, size)
        for name_at, _, _, address, offset, size, *_ in sections
    }


def section_bytes(handle: BinaryIO, section: Section) -> bytes:
    """A section's bytes; a ValueError when the file is cut short."""
    return _read(handle, section.offset, section.size)


def rodata_sections(path: Path) -> Sections:
    """The `.rodata` sections of an ELF file, with their offsets in it; a ValueError when
    the file is no 64-bit little-endian ELF or is cut short."""
    with path.open("rb") as handle:
        return [
            (section.offset, section_bytes(handle, section))
            for name, section in section_table(handle).items()
            if name == b".rodata" or name.startswith(b".rodata.")
        ]


def _read(handle: BinaryIO, offset: int, size: int) -> bytes:
    handle.seek(offset)
    data: bytes = handle.read(size)
    if len(data) < size:
        raise ValueError("ELF section cut short")
    return data


def write_rodata(sections: Sequence[tuple[int, bytes]], target: Path) -> None:
    """Keep a library's read-only data sections in `target` (read back by `read_only_data`)."""
    with target.open("wb") as handle:
        handle.write(_DUMP_MAGIC)
        for offset, data in sections:
            handle.write(_DUMPED.pack(offset, len(data)))
            handle.write(data)


def _read_dump(path: Path) -> Sections:
    data = path.read_bytes()
    found: Sections = []
    at = len(_DUMP_MAGIC)
    while at < len(data):
        if at + _DUMPED.size > len(data):
            raise ValueError("read-only data file cut short")
        offset, size = _DUMPED.unpack_from(data, at)
        at += _DUMPED.size
        if at + size > len(data):
            raise ValueError("read-only data file cut short")
        found.append((offset, data[at : at + size]))
        at += size
    return found


def read_only_data(path: Path) -> Sections:
    """The read-only data sections of a library: an ELF file, or the file `write_rodata`
    kept of one; a ValueError (or OSError) when it is neither, or is cut short."""
    with path.open("rb") as handle:
        head = handle.read(len(_DUMP_MAGIC))
    if head.startswith(_ELF_MAGIC):
        return rodata_sections(path)
    if head == _DUMP_MAGIC:
        return _read_dump(path)
    raise ValueError("neither an ELF file nor a read-only data file")
