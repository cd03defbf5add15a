"""NCCL's result codes -> one draft each at the torch check that reports them.

torch's NCCL checks (`C10D_NCCL_CHECK` and its kin, in the file its `nccl_check` names)
raise `NCCL error in: <file>:<line>, <text>, NCCL version <version>` and, on the next line,
torch's own detail of the code (`ncclUnhandledCudaError: Call to CUDA function failed.`),
the text being what NCCL's `ncclGetErrorString` returns: the same sentence for every
collective that fails. The NCCL release torch was built against (app/upstreams/
nvidia_packages.py) holds the codes (the `ncclResult_t` enum of `nccl.h`) and the texts: its
library keeps them as the strings of that function's switch, beside its default (`unknown
result code`), each holding the words of its code's name (`ncclUnhandledCudaError`:
`unhandled cuda error (run with NCCL_DEBUG=INFO for details)`), in the compiler's order. The
texts are taken only when every code has one.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from app.harvest.message_pieces import Field, Part
from app.harvest.messages import parts_message
from app.harvest.site_records import CatalogueEntry, DraftStamp, catalogue_draft
from app.harvest.sites import Draft
from app.upstreams.elf import Sections, read_only_data
from app.upstreams.nvidia_packages import NCCL_HEADER, NCCL_RODATA

UNREADABLE_NCCL = "unreadable NCCL package"
DEFAULT_CLASS = "torch.distributed.DistBackendError"
_LAST = b"unknown result code"
_WINDOW = 2048  # bytes either side of it that hold the texts
_NAME_WORD = re.compile(r"[A-Z][a-z]*")
_WORD = re.compile(r"[a-z]+")
_ENUM = re.compile(r"typedef\s+enum\s*\{([^}]*)\}\s*ncclResult_t\s*;")
_MEMBER = re.compile(r"(nccl\w+)\s*=\s*(\d+)")
_COUNT = "ncclNumResults"
# What the check raises: `TORCH_CHECK_WITH(DistBackendError, false, err)`, or an older
# release's `throw std::runtime_error(err)`.
_RAISED = re.compile(
    r'"NCCL error in: ".{0,400}?(?:TORCH_CHECK_WITH\(\s*(\w+)|throw\s+std::(runtime_error))',
    re.DOTALL,
)
_CLASSES = {"DistBackendError": DEFAULT_CLASS, "runtime_error": "RuntimeError"}


@dataclass(frozen=True)
class NcclResult:
    """One result code: its number and name, and the text NCCL prints for it."""

    code: int
    name: str
    text: str


def read_nccl(folder: Path) -> list[NcclResult]:
    """The result codes of the NCCL release kept in `folder` (its header and its library's
    read-only data); a ValueError (or OSError) when either cannot be read."""
    header = (folder / NCCL_HEADER).read_text(errors="replace")
    return nccl_results(header, read_only_data(folder / NCCL_RODATA))


def nccl_results(header: str, sections: Sections) -> list[NcclResult]:
    """The result codes of `nccl.h` (not ncclSuccess) with their texts from the library's
    read-only data; a ValueError when the enum, or a text for every code, is missing."""
    enum = _ENUM.search(header)
    members = {name: int(code) for name, code in _MEMBER.findall(enum.group(1) if enum else "")}
    count = members.pop(_COUNT, None)
    if count is None or sorted(members.values()) != list(range(count)):
        raise ValueError("nccl.h has no ncclResult_t enum numbered 0 to ncclNumResults")
    names = sorted(members, key=members.__getitem__)[1:]  # not ncclSuccess
    texts = _texts(sections, names)
    return [NcclResult(members[name], name, texts[name]) for name in names]


def nccl_error_class(header: Path | None) -> str:
    """The class the release's NCCL check raises, read from its header where the release
    has it; torch's DistBackendError otherwise."""
    if header is None or not header.is_file():
        return DEFAULT_CLASS
    found = _RAISED.search(header.read_text(errors="replace"))
    name = next((group for group in found.groups() if group), "") if found else ""
    return _CLASSES.get(name, DEFAULT_CLASS)


def nccl_error_drafts(
    results: list[NcclResult], release: str, file_path: str, error_class: str, stamp: DraftStamp
) -> list[Draft]:
    """One draft per result code, filed at torch's NCCL check, its message the line torch
    prints with the file, line, NCCL version and torch's detail as values."""
    drafts = []
    for result in results:
        parts: tuple[Part, ...] = (
            "NCCL error in: ",
            Field("file"),
            ":",
            Field("line"),
            f", {result.text}, NCCL version ",
            Field("version"),
            "\n",
            Field("detail"),
        )
        message, _ = parts_message(parts)
        if message is None:
            continue
        statement = (
            f"NCCL returned `{result.name}` (result {result.code}), which "
            f"`ncclGetErrorString` prints as \u201c{result.text}\u201d."
        )
        entry = CatalogueEntry(
            message, error_class, result.name, statement, release, NCCL_HEADER, None
        )
        drafts.append(catalogue_draft(entry, file_path, stamp))
    return drafts


def _texts(sections: Sections, names: list[str]) -> dict[str, str]:
    """Each code's text among the strings around `unknown result code` (the switch's
    default): the one holding every word of the code's name but `nccl` and `error`, the
    shortest where several do. The strings' order is the compiler's (NCCL 2.14's library
    keeps them out of the code's order), their words are NCCL's own."""
    for _, data in sections:
        anchor = data.find(b"\0" + _LAST + b"\0")
        if anchor < 0:
            continue
        window = data[max(0, anchor - _WINDOW) : anchor + _WINDOW]
        strings = [s.decode("ascii", "replace") for s in window.split(b"\0") if s]
        found = {}
        for name in names:
            wanted = {w.lower() for w in _NAME_WORD.findall(name.removeprefix("nccl"))}
            wanted -= {"error"}
            fits = [s for s in strings if wanted <= set(_WORD.findall(s.lower()))]
            if not wanted or not fits:
                break
            found[name] = min(fits, key=len)
        else:
            return found
    raise ValueError(f"no NCCL result texts around {_LAST.decode()!r}")
