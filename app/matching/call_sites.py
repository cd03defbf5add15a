"""A native check whose message names the line that called it, answered at that line.

torch's NCCL check (`C10D_NCCL_CHECK`) is a macro defined in
`torch/csrc/distributed/c10d/NCCLUtils.hpp` and called from ProcessGroupNCCL.cpp and other
files, and its message says which call failed: `NCCL error in:
../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1331, unhandled cuda error` (the
`__FILE__` and `__LINE__` of the call). The harvested record is the macro's, filed where the
macro is written, and no wheel ships the `.cpp` that called it. Where the message a record
matched names another of torch's source files, the answer is a record of the check at that
call: the macro's record filed at the named file and line, made while matching and kept for
GET as a statement's is (app.matching.statements), with the macro's record beside it.
"""

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app import upstreams
from app.records.model import ID_LENGTH
from app.records.service import DRAFT, StoredRecord, canonical_json
from app.records.slug import slug

REPO = upstreams.TORCH
# A path a build compiled (`../torch/csrc/...`, `/pytorch/aten/src/...`): its repository path
# from torch's source roots on.
_SOURCE = re.compile(
    r"(?:^|[/\\])(?P<path>(?:aten/src|c10|torch/csrc|caffe2)/[\w./+-]{1,256}"
    r"\.(?:cpp|cc|cu|cuh|h|hpp))$"
)
_LINE = re.compile(r"[0-9]{1,7}")


@dataclass(frozen=True, slots=True)
class CallSite:
    """The source file and line a message names as its own."""

    file_path: str
    line: int


def named_call_site(captures: Mapping[str, str | None]) -> CallSite | None:
    """The call a message names: a captured value that is a path of torch's sources, and the
    line captured right after it."""
    values = [value.strip() for value in captures.values() if value]
    for at, value in enumerate(values[:-1]):
        found = _SOURCE.search(value.replace("\\", "/"))
        if found is not None and _LINE.fullmatch(values[at + 1]):
            return CallSite(found["path"], int(values[at + 1]))
    return None


def call_site_record(
    macro: StoredRecord, site: CallSite, own_files: Iterable[str]
) -> StoredRecord | None:
    """The record of the check at the call its message names, made of the macro's record;
    None where the named file is the record's own (a check written where it fails)."""
    if macro.record.repo != REPO or site.file_path in {macro.record.file_path, *own_files}:
        return None
    document = json.loads(macro.document)
    key = "\0".join(["call site", macro.id, site.file_path, str(site.line)])
    record_id = hashlib.sha256(key.encode()).hexdigest()[:ID_LENGTH]
    release = document.get("analyzedSha") or "main"
    defined = f"`{macro.record.file_path}`"
    document |= {
        "id": record_id,
        "slug": slug(f"{document['slug']} {site.file_path.rpartition('/')[2]}") or "call-site",
        "filePath": site.file_path,
        "lineNumber": site.line,
        "sourceCode": None,
        "sourceCodeStart": None,
        "sourceCodeEnd": None,
        "githubUrl": f"https://github.com/{REPO}/blob/{release}/{site.file_path}",
        "documentation": (
            f"Raised by the check called at `{site.file_path}:{site.line}`, which the "
            f"message names (the line is the build's that ran; the file is linked at "
            f"{release}). The check itself is written in {defined}: "
            + (document.get("documentation") or "")
        ),
        "tags": sorted({*document.get("tags", ()), "call-site"}),
    }
    return StoredRecord.of(record_id, canonical_json(document), DRAFT, "call site", None)
