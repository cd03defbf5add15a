"""A compiled library's message literals -> native sites: what torch's `.so` files say.

torch's checks in `.cpp` and `.cu` files are compiled into its libraries (`libtorch_cpu.so`,
`libc10.so`, `libtorch_python.so`, and the CUDA build's `libtorch_cuda.so`): the wheel holds
no source for them, only their literals in the ELF file's read-only data. `c10::str("a ", x,
" b")` leaves the literals `"a "` and `" b"` there, usually one after the other (a short one
that many messages share is merged elsewhere by the linker), so a fragment that ends where a
value goes (a space, `(`, `=`, `: `) is joined to the next one that begins where a value ends,
with a `{value}` between, and a message that still ends or begins at a value gets one there.

A literal's source file is known where the library shows it: an internal assert's literal
holds its file and line, and a message lying between two `__FILE__` literals of the same
`.cpp`/`.cu` file was compiled from that file (the strings of one translation unit lie
together). Otherwise the site names only its library. A literal that follows the `__FILE__`
literal of a library built outside torch's tree and linked in (LLVM, MAGMA) is that
library's, not a message torch raises: it is left out, counted.

The read-only data comes from the library itself, or from the file the release cache keeps
of a library it read from a wheel it did not keep (app/upstreams/elf.py: torch's CUDA build).
A file that is neither, or that is cut short, is skipped with its reason, never a crash.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from app.harvest.message_pieces import Field, Part
from app.harvest.messages import parts_message
from app.harvest.sites import UNKNOWN_CLASS, Message
from app.upstreams.elf import read_only_data

UNREADABLE_LIBRARY = "unreadable library"
MIN_WORDS = 3
MIN_CHARS = 16
MAX_LITERAL_CHARS = 2000
MAX_JOINED = 8  # fragments of one message
RUNTIME_ERROR = "RuntimeError"
# Where torch's build tree keeps its sources: the literal's path from there on is the repo's.
_SOURCE_PATH = re.compile(
    rb"(?:^|/)(?<!build/)((?:aten/src|c10|torch/csrc|torch/headeronly|caffe2)/[\w./+-]+\.(?:cpp|cc|cu|cuh|h))$"
)
# A `.cpp`/`.cu` file's `__FILE__` literal (not a header's, whose literal one unit keeps
# for all), torch's own or a submodule's it builds in (gloo's `third_party/gloo/gloo/
# transport/tcp/pair.cc`, whose messages follow it as torch's follow theirs), and a
# message-like literal: printable, beginning with a letter.
_UNIT_LITERAL = re.compile(
    rb"(?<![^\0])[^\0]*?(?<!build/)"
    rb"((?:aten/src|c10|torch/csrc|caffe2|third_party/[\w.+-]+)/[\w./+-]+\.(?:cpp|cc|cu))\0"
)
# An absolute `__FILE__` literal of a library built outside torch's tree and linked in
# (torch 2.0-2.x's libtorch_cpu.so holds LLVM's, built at /tmp/llvm: 57,000 of its literals;
# libtorch_cuda_linalg.so MAGMA's): the strings after it are that library's, not torch's.
_FOREIGN_UNIT = re.compile(rb"(?<![^\0])(/[\w.+-]+(?:/[\w.+-]+)*\.(?:cpp|cc|c))\0")
_TORCH_TREE = re.compile(rb"pytorch|(?:^|/)(?:aten|c10|torch|caffe2|third_party)/")
FOREIGN = ""  # the unit of a literal of a library linked in
FOREIGN_LITERAL = "literal of a library linked in"
_CANDIDATE = re.compile(
    rb"(?<![^\0])[A-Za-z][\x20-\x7e\n]{%d,%d}(?=\0)" % (MIN_CHARS - 1, MAX_LITERAL_CHARS)
)
_ASSERT_PLACE = re.compile(r' INTERNAL ASSERT FAILED at "([^"]*)":(\d+)')
_WORD = re.compile(r"[A-Za-z]{2,}")
_NOT_MESSAGE = re.compile(
    r"^\w+ = \w+\(|aten::|Tensor\(|\) -> |^[\w.]+\("  # ONNX bodies, schemas, calls
    r"|%[-#0-9.]*[sdizulfgxXcp]|\\[a-z]|[<>]{2}"  # printf formats, escapes
    # Names (`CUDNN_ATTR_...`, `INFO: ...`) but not an acronym that begins a sentence
    # ("CUDA out of memory", "NCCL timeout in: "); protobuf's own CHECKs are not torch's.
    r"|^[A-Z_]{4,}\b(?! [a-z])|^CHECK failed"
)
_VALUE_BEFORE = (" ", "(", "=", ": ", "[", "'", '"')  # a fragment that ends with one needs a value
_VALUE_AFTER = (" ", ",", ")", ".", "'", '"', "]", ";", "!")  # one that begins so had one


@dataclass(frozen=True)
class LiteralSite:
    """A message of a compiled library: its template, its source file and line where the
    library shows them, and the class Python users see where the text says it."""

    message: Message
    error_class: str
    source_file: str | None
    line: int | None
    offset: int  # in the library's read-only data: the order of the sites
    head: str = ""  # the literal the message begins with, as the library has it


def library_sites(path: Path) -> tuple[list[LiteralSite], Counter[str]]:
    """The message literals of one compiled library (its ELF file, or the read-only data the
    release cache kept of it), joined into templates; an unreadable file gives none and one
    counted reason."""
    try:
        sections = read_only_data(path)
    except (OSError, ValueError, struct.error):
        return [], Counter({UNREADABLE_LIBRARY: 1})
    sites: list[LiteralSite] = []
    skipped: Counter[str] = Counter()
    for base, data in sections:
        units = [(m.start(), m.group(1).decode()) for m in _UNIT_LITERAL.finditer(data)]
        units += [
            (m.start(), FOREIGN)
            for m in _FOREIGN_UNIT.finditer(data)
            if not _TORCH_TREE.search(m.group(1))
        ]
        units.sort()
        consumed = 0
        for head in _CANDIDATE.finditer(data):
            text = head.group().decode()
            if head.start() < consumed or not _is_message(text):
                continue
            pieces = [text]
            end = head.end()
            # An internal assert's own literal ends where its arguments begin: any literal may
            # follow it, so it is never joined.
            joins = " INTERNAL ASSERT FAILED at " not in text
            while joins and len(pieces) < MAX_JOINED and pieces[-1].endswith(_VALUE_BEFORE):
                following, after = _next_string(data, end)
                if following is None or not following.startswith(_VALUE_AFTER):
                    break
                if not _WORD.search(following) or not _continues(following):
                    break
                pieces.append(following)
                end = after
            consumed = end
            site = _site(pieces, head.start(), units)
            if site is None:
                skipped["no literal text"] += 1
            elif site.source_file == FOREIGN:
                skipped[FOREIGN_LITERAL] += 1
            else:
                sites.append(replace(site, offset=base + site.offset))
    return sites, skipped


def _next_string(data: bytes, end: int) -> tuple[str | None, int]:
    """The string after the one ending at `end` (past the NULs between), and its end."""
    start = end
    while start < len(data) and data[start] == 0:
        start += 1
    stop = data.find(b"\0", start)
    if stop == -1 or stop - start > MAX_LITERAL_CHARS:
        return None, start
    try:
        text = data[start:stop].decode("ascii")
    except UnicodeDecodeError:
        return None, start
    return (text if text.isprintable() else None), stop


def _continues(following: str) -> bool:
    """Whether a literal may be the rest of the message before it: not an internal assert's
    own literal (`!x.empty() INTERNAL ASSERT FAILED at ...` begins like a continuation), nor
    a file's path (older builds keep `../c10/core/MemoryFormat.h`, which begins with `.`)."""
    is_path = "/" in following and " " not in following
    return " INTERNAL ASSERT FAILED at " not in following and not is_path


def _is_message(text: str) -> bool:
    """A literal that reads as (the start of) an error message, not a name, a path, an
    operator schema, a printf format or a table."""
    return (
        len(text) >= MIN_CHARS
        and text[0].isalpha()
        and len(_WORD.findall(text)) >= MIN_WORDS
        and " " in text
        and "/" not in text.split(" ", 1)[0]
        and _NOT_MESSAGE.search(text) is None
    )


def _site(pieces: list[str], offset: int, units: list[tuple[int, str]]) -> LiteralSite | None:
    parts: list[Part] = []
    for number, piece in enumerate(pieces):
        if number:
            parts.append(Field("value"))
        for at, chunk in enumerate(piece.split("{}")):
            if at:
                parts.append(Field("value"))
            if chunk:
                parts.append(chunk)
    if pieces[-1].endswith(_VALUE_BEFORE):
        parts.append(Field("value"))
    head = pieces[0]
    place = _ASSERT_PLACE.search(head)
    if place and isinstance(parts[0], str) and parts[0].startswith(head[: place.end()]):
        # The file and line are the build's: the template keeps them as values.
        rest = parts[0][place.end() :]
        parts[:1] = [head[: place.start(1)], Field("file"), '":', Field("line")]
        parts[4:4] = [rest] if rest else []
    message, _ = parts_message(tuple(parts))
    if message is None:
        return None
    built = _SOURCE_PATH.search(place.group(1).encode()) if place else None
    source = built.group(1).decode() if built else _unit_at(units, offset)
    line = int(place.group(2)) if built and place else None
    error_class = RUNTIME_ERROR if place or head.startswith("Expected ") else UNKNOWN_CLASS
    return LiteralSite(message, error_class, source, line, offset, head)


def _unit_at(units: list[tuple[int, str]], offset: int) -> str | None:
    """The file of the nearest `__FILE__` literal before the offset (FOREIGN: a library's
    linked in): the strings of one translation unit follow its file's literal. Checked
    against the internal asserts of torch 2.13.0's libtorch_cpu.so, which name their own
    file: right for 4,060 of 4,262."""
    at = bisect_left(units, (offset, ""))
    return units[at - 1][1] if at else None
