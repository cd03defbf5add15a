"""What ranking reads of a record (a `Candidate`) and of a paste (`Paste`): where the
record's site is in each known release, and which of the paste's frames are in its files and
which repositories they come from.

Ranking asks these of every candidate a paste hits; they are worked out once, per record
(its path suffixes) or per paste (its frames' paths and repositories), not for every
component that reads them.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app import upstreams
from app.exception_classes import ClassGraph
from app.matching.tracebacks.model import Frame, ParsedException
from app.records.locations import Location
from app.records.model import LOGGED_TYPES, ErrorRecord
from app.records.native_settings import has_no_python_frames
from app.records.site_keys import called_helper, message_template, raising_function

# The standard library's files (`/usr/lib/python3.10/runpy.py`, `C:\Python39\lib\x.py`):
# where a worker's exception is re-raised (multiprocessing, concurrent.futures), not made.
_STDLIB = re.compile(r"[/\\]lib[/\\](?:python[0-9.]*[/\\])?[\w.]+(?:[/\\][\w.]+)*$", re.IGNORECASE)
# A frame's source line that makes a new exception there (`raise AttributeError(f"...")`),
# not one that passes on another (`raise`, `raise e`).
_MAKES_NEW = re.compile(r"raise [\w.]+\(")
# Where bundled packages sit in their repositories (`sgl-kernel/python/`): an installed
# one's frames show the path from its package folder on.
_BUNDLED = tuple(bundled.path_prefix for _, bundled in upstreams.BUNDLED.values())


@dataclass(frozen=True, slots=True)
class Candidate:
    """What ranking needs of a record whose pattern hit the paste."""

    id: str
    repo: str
    error_class: str
    error_message: str
    file_path: str | None
    line_number: int | None  # as the record was written
    lines: dict[int, str]  # every known line of the site in its file -> release ("": as written)
    functions: frozenset[str]  # the functions the site is in, in any known release
    reviewed: bool
    gone: bool
    files: frozenset[str] = frozenset()  # its file in any known release
    releases: frozenset[str] = frozenset()  # the `name==version` releases its site is in
    template: str = ""  # its message template: records raising the same one go together
    calls: str | None = None  # the raising helper its site calls, which raises the message
    logged: bool = False  # a log or warning site's record: its message is a whole log line
    suffixes: tuple[str, ...] = field(init=False)  # a frame in its files ends with one

    def __post_init__(self) -> None:
        """The path suffixes of its files, worked out once per record (a candidate is kept
        per dataset version) rather than for every frame of every paste it is ranked for."""
        files = self.files | ({self.file_path} if self.file_path else set())
        suffixes = tuple(suffix for file in sorted(files) for suffix in path_suffixes(file))
        object.__setattr__(self, "suffixes", suffixes)


def candidate_from(
    record: ErrorRecord,
    review_state: str,
    gone_in: str | None,
    known: Sequence[Location] = (),
) -> Candidate:
    """The ranking view of a stored record, with where its site is in each known release."""
    here = [loc for loc in known if not loc.gone and loc.file_path == record.file_path]
    lines = {loc.line_number: loc.release for loc in here if loc.line_number is not None}
    if record.line_number is not None:
        lines.setdefault(record.line_number, "")
    functions = {loc.function for loc in here if loc.function} | {raising_function(record)}
    files = {loc.file_path for loc in known if not loc.gone} | {record.file_path}
    return Candidate(
        id=record.id,
        repo=record.repo,
        error_class=record.error_class,
        error_message=record.error_message,
        file_path=record.file_path,
        line_number=record.line_number,
        lines=lines,
        functions=frozenset(name for name in functions if name is not None),
        reviewed=review_state == "reviewed",
        gone=gone_in is not None,
        files=frozenset(path for path in files if path is not None),
        releases=frozenset(loc.release for loc in known if not loc.gone and "==" in loc.release),
        template=message_template(record.message_pattern, record.error_message),
        calls=called_helper(record),
        logged=record.error_type in LOGGED_TYPES,
    )


def frame_repo(frame: Frame) -> str | None:
    """The upstream repository a frame's file belongs to: the first folder of its path that
    is a known package (`.../site-packages/vllm/...`, a checkout's `.../vllm/...`)."""
    for folder in frame.file.replace("\\", "/").split("/")[:-1]:
        if repo := upstreams.package_repo(folder):
            return repo
    return None


def path_suffixes(file_path: str) -> tuple[str, ...]:
    """The record's path, and without its first folder (SGLang's `python/`) or the folders
    a bundled package sits in (`sgl-kernel/python/`), as suffixes."""
    parts = file_path.split("/")
    suffixes = ["/" + file_path]
    if len(parts) > 2:
        suffixes.append("/" + "/".join(parts[1:]))
    suffixes += ["/" + file_path.removeprefix(p) for p in _BUNDLED if file_path.startswith(p)]
    return tuple(suffixes)


def frame_path(frame: Frame) -> str:
    """The frame's file as a path with forward slashes and a leading one, to compare its end
    with a record's path suffixes."""
    return "/" + frame.file.replace("\\", "/").lstrip("/")


class Paste:
    """What ranking reads of the paste, worked out once for all its candidates: records of
    many releases are ranked against the same exception, and each asked again which of its
    frames are in their files and which repositories they come from."""

    def __init__(
        self,
        exceptions: Sequence[ParsedException],
        graph: ClassGraph,
        log_repos: frozenset[str],
        log_versions: Mapping[str, str],
    ) -> None:
        self.last_index = exceptions[-1].index if exceptions else -1
        self.causes = {e.cause_index for e in exceptions if e.cause_index is not None}
        self.graph = graph
        self.log_repos = log_repos
        self.log_versions = log_versions
        self._paths: dict[int, list[str]] = {}
        self._repos: dict[int, set[str]] = {}
        self._in_files: dict[tuple[str, int], list[Frame]] = {}

    def frames_in_files(self, candidate: Candidate, exception: ParsedException) -> list[Frame]:
        """The exception's frames in the record's files (`_frames_in_files`)."""
        key = (candidate.id, exception.index)
        found = self._in_files.get(key)
        if found is None:
            paths = self._paths.get(exception.index)
            if paths is None:
                paths = self._paths[exception.index] = list(map(frame_path, exception.frames))
            found = [
                frame
                for frame, path in zip(exception.frames, paths, strict=True)
                if path.endswith(candidate.suffixes)
            ]
            self._in_files[key] = found
        return found

    def frames_agree(self, candidate: Candidate, exception: ParsedException) -> bool:
        """Whether a frame of the exception is in the record's file."""
        return bool(candidate.file_path) and bool(self.frames_in_files(candidate, exception))

    def repos(self, exception: ParsedException) -> set[str]:
        """The upstream repositories the exception's frames come from."""
        found = self._repos.get(exception.index)
        if found is None:
            frames = exception.frames
            found = {repo for frame in frames if (repo := frame_repo(frame))}
            self._repos[exception.index] = found
        return found


def _frames_in_files(candidate: Candidate, frames: Sequence[Frame]) -> list[Frame]:
    """The frames in the record's file, as written or in any harvested release."""
    return [frame for frame in frames if frame_path(frame).endswith(candidate.suffixes)]


def makes_exceptions(frame: Frame) -> bool:
    """Whether an innermost frame is where its exception was made: any code but the
    standard library's re-raising of another process's or thread's error, and a file that
    is no file (`<frozen runpy>`, `<string>`)."""
    path = frame.file
    if path.startswith("<"):
        return False
    return "-packages" in path or _STDLIB.search(path) is None


def raised_below(candidate: Candidate, frames: Sequence[Frame]) -> bool:
    """Whether the innermost frame makes a new exception (`raise Error(...)`) in another file,
    below the frames in the record's file: the exception was made there, and the record's
    file only called into it (transformers' `__getattr__` raising `Qwen2Tokenizer has no
    attribute ...` under vLLM's tokenizer code, whose module `__getattr__` says `module ...
    has no attribute ...`; an unharvested SGLang release's `cuda_graph_runner.py` raising the
    words an older `model_runner.py` raised). Not the helper the record's site calls with its
    message (SGLang's `raise_error_or_warn`)."""
    innermost = frames[-1]
    path = frame_path(innermost)
    return (
        _MAKES_NEW.match(innermost.source.strip()) is not None
        and makes_exceptions(innermost)
        and innermost.function != candidate.calls  # the helper it calls raised its message
        and not path.endswith(candidate.suffixes)
        and not any(suffix.endswith(path) for suffix in candidate.suffixes)  # a cut path
    )


def raised_elsewhere(candidate: Candidate, exception: ParsedException) -> bool:
    """Whether the exception's frames say it was raised in code no frame of the record's
    file is in (`frames.raised-elsewhere`): the record is at most a copy of its message. A
    C++ or CUDA site has no Python frame: any frame may be the call into it; a warning's one
    frame is where `warnings.warn` put it, its caller's line as its `stacklevel` says
    (torch's `TypedStorage is deprecated` names the user's file), not where it was raised."""
    frames = exception.frames
    return (
        bool(frames)
        and bool(candidate.file_path)
        and not candidate.logged
        and not has_no_python_frames(candidate.file_path)
        and not _frames_in_files(candidate, frames)
        and makes_exceptions(frames[-1])
    )
