"""The CUDA runtime's error codes -> one draft each at the torch check that reports them.

torch turns every failed CUDA call into `CUDA error: <text>` (`C10_CUDA_CHECK`,
c10/cuda/CUDAException.cpp), the text being what `cudaGetErrorString` returns for the code:
the same sentence for every kernel, allocation or launch that fails, so no harvested check
names it. The runtime torch was built against (app/upstreams/nvidia_packages.py) holds both
halves of a catalogue entry:

- `libcudart.so` keeps a table of `{code, "cudaErrorX", "text"}` rows in its relocated
  read-only data: each row's two string pointers are relocations (`R_X86_64_RELATIVE`)
  whose addends are the strings' addresses, so a name's row is found from the relocation
  that points at it, and the text from the one eight bytes after (the code eight before).
- `driver_types.h` documents each code in a doc comment above its `cudaErrorX = N,`.

Each entry becomes a draft filed where torch raises it, its meaning the explanation's
trigger, sourced to the runtime release's header and line.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from app.harvest.messages import parts_message
from app.harvest.site_records import CatalogueEntry, DraftStamp, catalogue_draft
from app.harvest.sites import Draft
from app.upstreams.elf import section_bytes, section_table
from app.upstreams.nvidia_packages import RUNTIME_HEADER as HEADER
from app.upstreams.nvidia_packages import RUNTIME_LIBRARY as LIBRARY
from app.upstreams.nvidia_packages import package_release

UNREADABLE_RUNTIME = "unreadable CUDA runtime"
_RELA = struct.Struct("<QQq")  # offset, info, addend
_RELATIVE = 8  # R_X86_64_RELATIVE
_POINTER = 8
_CODE_NAME = re.compile(r"cudaError\w+|cudaSuccess")
_DOCUMENTED = re.compile(r"/\*\*((?:(?!\*/).)*)\*/\s*(cudaError\w+)\s*=\s*(\d+)", re.DOTALL)
_DOC_MARKUP = re.compile(r"\\(?:ref|p|c|e|b|note)\s+|::(?=\w)")
_DEPRECATED = "\\deprecated"


@dataclass(frozen=True)
class CudaError:
    """One runtime error code: its number and name, the text torch prints, what NVIDIA says
    it means and where (the header's line; None where the header does not document it)."""

    code: int
    name: str
    text: str
    meaning: str | None
    line: int | None
    deprecated: bool


def runtime_errors(folder: Path) -> list[CudaError]:
    """The runtime's error codes (not `cudaSuccess`), in code order; a ValueError when the
    library is no 64-bit little-endian ELF or holds no such table."""
    documented = _documented((folder / HEADER).read_text(errors="replace"))
    rows = _table(folder / LIBRARY)
    if not rows:
        raise ValueError(f"{LIBRARY} holds no table of error strings")
    errors = []
    for code, name, text in sorted(rows):
        if code == 0:
            continue
        meaning, line, deprecated = documented.get(name, (None, None, False))
        errors.append(CudaError(code, name, text, meaning, line, deprecated))
    return errors


def cuda_error_drafts(
    errors: list[CudaError],
    folder: Path,
    file_path: str,
    prefix: str,
    error_class: str,
    stamp: DraftStamp,
) -> list[Draft]:
    """One draft per error text, filed at `file_path` (where the project raises it) with
    the message `prefix + text`, its meaning the trigger of its explanation. Codes that share
    a text (CUDA 13's 200 and 300) are one draft: a paste cannot tell them apart."""
    runtime = package_release(folder)
    by_text: dict[str, list[CudaError]] = {}
    for error in errors:
        by_text.setdefault(error.text, []).append(error)
    drafts = []
    for text, same in by_text.items():
        message, _ = parts_message((prefix + text,))
        if message is None:
            continue
        error = same[0]
        codes = " or ".join(f"`{e.name}` (error {e.code})" for e in same)
        said = " ".join(f"NVIDIA: {e.meaning}" for e in same if e.meaning)
        statement = f"the CUDA runtime returned {codes}." + (f" {said}" if said else "")
        entry = CatalogueEntry(
            message, error_class, error.name, statement, runtime, HEADER, error.line
        )
        drafts.append(catalogue_draft(entry, file_path, stamp))
    return drafts


def _documented(header: str) -> dict[str, tuple[str, int, bool]]:
    """Each documented code's meaning (the doc comment in one line, without Doxygen's
    markup), the line of its `cudaErrorX = N`, and whether the comment deprecates it."""
    found = {}
    for match in _DOCUMENTED.finditer(header):
        lines = [line.strip().lstrip("*").strip() for line in match.group(1).splitlines()]
        comment = " ".join(line for line in lines if line)
        deprecated = _DEPRECATED in comment
        meaning = _DOC_MARKUP.sub("", comment.replace(_DEPRECATED, "")).strip()
        line = header.count("\n", 0, match.start(2)) + 1
        found[match.group(2)] = (" ".join(meaning.split()), line, deprecated)
    return found


def _table(library: Path) -> list[tuple[int, str, str]]:
    """The `{code, name, text}` rows of the library's relocated data."""
    with library.open("rb") as handle:
        sections = section_table(handle)
        relocations = sections.get(b".rela.dyn")
        strings = sections.get(b".rodata")
        rows_in = sections.get(b".data.rel.ro")
        if relocations is None or strings is None or rows_in is None:
            return []
        table = section_bytes(handle, relocations)
        text = section_bytes(handle, strings)
        rows = section_bytes(handle, rows_in)
    pointers = {}
    for index in range(len(table) // _RELA.size):
        where, info, addend = _RELA.unpack_from(table, index * _RELA.size)
        if info & 0xFFFFFFFF == _RELATIVE:
            pointers[where] = addend

    def string(address: int | None) -> str | None:
        at = (address or 0) - strings.address
        if address is None or not 0 <= at < len(text):
            return None
        return text[at : text.index(b"\0", at)].decode("ascii", "replace")

    found = []
    for where, address in pointers.items():
        name = string(address)
        message = string(pointers.get(where + _POINTER))
        code_at = where - _POINTER - rows_in.address
        if name is None or message is None or not _CODE_NAME.fullmatch(name):
            continue
        if not 0 <= code_at <= len(rows) - 4:
            continue
        (code,) = struct.unpack_from("<i", rows, code_at)
        found.append((code, name, message))
    return found
