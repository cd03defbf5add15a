"""Which library outside the harvested upstreams raised an exception, from its innermost
frame or its own words.

pydantic's `Input should be a valid string`, argparse's `error: unrecognized arguments`,
huggingface_hub's `Repository Not Found for url`, NCCL's `ncclUnhandledCudaError`, the CUDA
driver's `CUDA error: ...` and the interpreter's wrong call (`f() got an unexpected keyword
argument 'x'` from a user's own script) are raised by code errkb has no site of. A record of
vLLM, SGLang or torch that holds the same words elsewhere is at most a copy of them: the
reply says who raised the exception (`raisedBy`), and ranking keeps such records possible
only (app.matching.rank_order). transformers is an upstream: its harvested sites answer its errors.
"""

import re

from app import upstreams
from app.matching.tracebacks.model import Frame, ParsedException

# The folder of an installed package (or the standard library's module) -> the library.
_PACKAGES = {
    "pydantic": "pydantic",
    "pydantic_core": "pydantic",
    "huggingface_hub": "huggingface_hub",
    "argparse.py": "argparse",
}
_WORDS = (
    ("pydantic", re.compile(r"\bvalidation errors? for [A-Za-z_]\w*|^Input should be |\[type=")),
    (
        "argparse",
        re.compile(
            r"\berror: (?:unrecognized arguments:|the following arguments are required:|"
            r"argument [^:\n]+: (?:invalid choice:|expected one argument|invalid \w+ value:)|"
            r"ambiguous option:)"
        ),
    ),
    (
        "huggingface_hub",
        re.compile(
            r"Repository Not Found for url|Cannot access gated repo|"
            r"\b(?:401|403) Client Error|We couldn't connect to 'https://huggingface\.co'"
        ),
    ),
    (
        "NCCL",
        re.compile(
            r"\bnccl(?:UnhandledCudaError|SystemError|InternalError|InvalidArgument|"
            r"InvalidUsage|RemoteError)\b|\bNCCL error\b"
        ),
    ),
    ("CUDA", re.compile(r"^CUDA error: |CUDA driver version is insufficient")),
)
# A wrong call's words, raised by the interpreter in the caller's frame (the user's script,
# when no upstream frame is innermost: app.matching.statements answers those).
WRONG_CALL = re.compile(
    r"\(\) (?:got an unexpected keyword argument|missing [0-9]+ required|takes [0-9]+ "
    r"positional|got multiple values for) "
)
_TYPE_ERROR = "TypeError"


def raised_by(exception: ParsedException) -> str | None:
    """The library that raised the exception, when it is none of the harvested upstreams:
    its innermost frame's package, else (unless that frame is an upstream's) the library
    whose own words the message is; None when nothing says."""
    if exception.frames:
        innermost = exception.frames[-1]
        found = _frame_library(innermost)
        if found is not None or _upstream(innermost):
            return found
    for library, words in _WORDS:
        if words.search(exception.message):
            return library
    if exception.error_class == _TYPE_ERROR and WRONG_CALL.search(exception.message):
        return "the interpreter"
    return None


def _upstream(frame: Frame) -> bool:
    """Whether a frame's file is in a harvested upstream's package."""
    folders = frame.file.replace("\\", "/").split("/")[:-1]
    return any(upstreams.package_repo(folder) for folder in folders)


def _frame_library(frame: Frame) -> str | None:
    """The library of an installed package's (or the standard library's) frame."""
    parts = frame.file.replace("\\", "/").split("/")
    for folder in reversed(parts):
        if (library := _PACKAGES.get(folder)) is not None:
            return library
    return None
