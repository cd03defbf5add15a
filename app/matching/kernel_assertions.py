"""A CUDA kernel's failed assertion, answered from the line the kernel printed.

Before `CUDA error: device-side assert triggered`, every failing GPU thread prints where
its kernel's `CUDA_KERNEL_ASSERT` failed: `/pytorch/aten/src/ATen/native/cuda/Indexing.cu:
1422: indexSelectLargeIndex: block: [0,0,0], thread: [5,0,0] Assertion `srcIndex <
srcSelectDimSize` failed.` The check is in torch's `.cu` sources, which no wheel ships (the
kernels' strings are device code, not a library's read-only data), so no harvested record
holds it; the line itself names the file, the line of the build that ran, the kernel and the
condition. Its record is made from it, as a statement's is (app.matching.statements): kept
in memory for GET, never written to the store. Where a record of the store holds the check
(a curated one), that record answers instead (app.matching.rank).
"""

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from app import upstreams
from app.matching.logtext import CleanLine
from app.records.advice_fields import UNWRITTEN_ADVICE
from app.records.model import ID_LENGTH, SCHEMA_VERSION
from app.records.service import DRAFT, StoredRecord, canonical_json
from app.records.slug import slug

REPO = upstreams.TORCH
# The line a failing thread prints: the build's path to the source (its repository path from
# `aten/src`, `c10`, `torch/csrc` or `caffe2` on), the line, the kernel, the thread, the check.
_ASSERTION = re.compile(
    r"(?:[^\s:]*?/)?(?P<file>(?:aten/src|c10|torch/csrc|caffe2)/[\w./+-]{1,256}\.cuh?):"
    r"(?P<line>[0-9]{1,7}): (?P<function>[^\n`]{1,512}?): block: \[[0-9,]{1,64}\], "
    r"thread: \[[0-9,]{1,64}\] Assertion `(?P<condition>[^\n]{1,1024})` failed"
)


@dataclass(frozen=True, slots=True)
class KernelAssertion:
    """One failed check of a kernel as a thread printed it, and the paste's line."""

    file_path: str
    line: int
    function: str
    condition: str
    text: str  # the clean line it was read from

    @property
    def message(self) -> str:
        return f"Assertion `{self.condition}` failed."


def kernel_assertions(lines: Sequence[CleanLine]) -> list[KernelAssertion]:
    """The paste's failed kernel checks, each once (thousands of threads print the same)."""
    found: dict[tuple[str, int, str, str], KernelAssertion] = {}
    for clean in lines:
        if "Assertion `" not in clean.text:
            continue
        matched = _ASSERTION.search(clean.text)
        if matched is None:
            continue
        key = (matched["file"], int(matched["line"]), matched["function"], matched["condition"])
        found.setdefault(key, KernelAssertion(*key, clean.text.strip()))
    return list(found.values())


def kernel_record(assertion: KernelAssertion, error_class: str) -> StoredRecord:
    """The record of a kernel's failed check, raised to Python as `error_class` by the next
    CUDA call; its file is linked at torch's current release (no paste says which ran)."""
    current = upstreams.BY_REPO[REPO].current_release
    release = "v" + current.partition("==")[2] if current else "main"
    where = f"`{assertion.file_path}:{assertion.line}` in the kernel `{assertion.function}`"
    key = "\0".join(
        ["kernel assertion", assertion.file_path, str(assertion.line), assertion.function]
    )
    key += "\0" + assertion.condition + "\0" + error_class
    record_id = hashlib.sha256(key.encode()).hexdigest()[:ID_LENGTH]
    document: dict[str, object] = {
        "id": record_id,
        "repo": REPO,
        "slug": slug(f"kernel assertion {assertion.condition}") or "kernel-assertion",
        "errorCode": None,
        "errorMessage": assertion.message,
        "messagePattern": re.escape(assertion.message),
        "errorType": "exception",
        "errorClass": error_class,
        "httpStatus": None,
        "severity": "error",
        "filePath": assertion.file_path,
        "lineNumber": assertion.line,
        "sourceCode": None,
        "sourceCodeStart": None,
        "sourceCodeEnd": None,
        "githubUrl": f"https://github.com/{REPO}/blob/{release}/{assertion.file_path}",
        "documentation": (
            f"A device-side assertion failed on the GPU at {where}: `{assertion.condition}` "
            "was false for the threads that printed this line, so the kernel stopped, and "
            "the next CUDA call raised `CUDA error: device-side assert triggered` (every "
            "later CUDA call in the process fails the same way). The line number is the "
            "build's that ran; the file is linked at a current release."
        ),
        "triggerScenarios": (
            "A value the kernel checks is out of its range, most often an index: a token id "
            "at or above the embedding's size, a class target outside [0, classes), a gather, "
            "scatter or index_select index past the indexed dimension."
        ),
        **UNWRITTEN_ADVICE,
        "tags": ["cuda", "kernel-assertion", "device-side-assert"],
        "backgroundTag": None,
        "analyzedSha": release,
        "analyzedAt": None,
        "schemaVersion": SCHEMA_VERSION,
    }
    return StoredRecord.of(record_id, canonical_json(document), DRAFT, "kernel assertion", None)
