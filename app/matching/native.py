"""What native code (C++, CUDA) prints around its messages, read the same way for every paste.

torch's CUDA check appends one tail to every CUDA error ("CUDA kernel errors might be
asynchronously reported ... CUDA_LAUNCH_BLOCKING=1 ... TORCH_USE_CUDA_DSA"), since torch 2.9
after a line that names the runtime's error code ("Search for `cudaErrorIllegalAddress' in
https://docs.nvidia.com/... for more information."): it is the same for every error of its
kind, so it is cut off before a message is compared and is never what a paste is matched on;
a record's pattern need not allow for it.
A device-side assert comes in two parts: the kernel's own assertion line, printed once per
failing thread before the traceback (`Indexing.cu:1422: indexSelectLargeIndex: ... Assertion
`srcIndex < srcSelectDimSize` failed.`), then `CUDA error: device-side assert triggered` from
the next CUDA call; the assertion names the check, the CUDA error only that one failed.
torch's ROCm builds print the same messages from the same checks, their sources turned to HIP
by torch's hipify: `HIP error: invalid device function`, `No HIP GPUs are available`, `HIP out
of memory`, and a tail of their own (`AMD_SERIALIZE_KERNEL=3`, `TORCH_USE_HIP_DSA`). They are
read in CUDA's words too, since errkb harvests torch's CUDA build.
gloo, which torch builds in for CPU collectives, begins its messages with the file and line
that made them (`[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by
peer ...`): the words after that place are what its literal holds.
"""

import re
from collections.abc import Sequence

from app.matching.tracebacks.model import ParsedException

_TAIL_SENTENCES = (
    r"Search for `cudaError\w*' in \S+ for more information"
    r"|(?:CUDA|HIP) kernel errors might be asynchronously reported"
    r"|For debugging consider passing (?:CUDA_LAUNCH_BLOCKING=1|AMD_SERIALIZE_KERNEL=3)"
    r"|Compile with `TORCH_USE_(?:CUDA|HIP)_DSA` to enable device-side assertions"
    r"|Device-side assertion tracking was not enabled by user"
)
_HIP = re.compile(r"\bHIP\b")
_TAIL = re.compile(rf"[\s.]*(?:{_TAIL_SENTENCES})(?s:.*)\Z")
_TAIL_LINE = re.compile(rf"\W*(?:{_TAIL_SENTENCES})")
_KERNEL_ASSERTION = re.compile(r"Assertion `.+` failed")
_PLACE_HEAD = re.compile(r"\[[^\]\s]{1,512}\.(?:cc|cpp|cu|h):[0-9]{1,7}\] ")
DEVICE_SIDE_ASSERT = "CUDA error: device-side assert triggered"


def without_tail(message: str) -> str:
    """The message without the asynchronous-report tail (itself when it has none)."""
    return _TAIL.sub("", message)


def in_cuda_words(message: str) -> str | None:
    """A ROCm build's message as torch's CUDA build prints it (`HIP error: ...` -> `CUDA
    error: ...`); None for a message that does not name HIP."""
    return _HIP.sub("CUDA", message) if _HIP.search(message) else None


def without_place(message: str) -> str | None:
    """A native message without the `[FILE:LINE] ` its code put before it (gloo's); None for
    a message that does not begin so."""
    head = _PLACE_HEAD.match(message)
    return None if head is None or head.end() == len(message) else message[head.end() :]


def is_tail_line(line: str) -> bool:
    """Whether a line is one of the tail's sentences."""
    return _TAIL_LINE.match(line) is not None


def is_kernel_assertion(line: str) -> bool:
    """Whether a line is a CUDA kernel's assertion (`Assertion `...` failed`)."""
    return _KERNEL_ASSERTION.search(line) is not None


def device_side_assert(exceptions: Sequence[ParsedException]) -> int | None:
    """The index of the paste's first device-side assert, which its kernel assertion lines
    belong to; None when it has none."""
    for index, exception in enumerate(exceptions):
        if DEVICE_SIDE_ASSERT in exception.message:
            return index
    return None


# The line c10 prints under a C++ error's message: `Exception raised from mha_fwd at
# .../csrc/flash_attn/flash_api.cpp:370 (most recent call first):`, the check's own file.
_RAISED_FROM = re.compile(
    r"(?m)^[ \t`]*Exception raised from \S+ at (?P<path>[^\n]+?):[0-9]+ "
    r"\(most recent call first\)"
)
# torch's own source folders, in a build's path to a file of them.
_TORCH_SOURCE = re.compile(r"(?:^|[/\\])(?:aten[/\\]src|c10|torch[/\\]csrc|caffe2)[/\\]")


def raised_from_elsewhere(text: str, exceptions: Sequence[ParsedException]) -> dict[int, str]:
    """Exception index -> the C++ file its `Exception raised from ... at FILE:LINE` line
    names, where that file is no source of torch's: another project's extension (flash-attn,
    xformers) raised it through c10's check, so torch's library holds its words only as a
    copy of its own (torch vendors flash-attention too)."""
    found = {}
    for index, exception in enumerate(exceptions):
        start, end = exception.message_span
        if index + 1 < len(exceptions):  # the next exception's lines are its own
            end = min(end + 2048, exceptions[index + 1].span[0])
        else:
            end += 2048
        named = _RAISED_FROM.search(text, start, end)
        if named is not None and _TORCH_SOURCE.search(named["path"]) is None:
            found[index] = named["path"].strip()
    return found
