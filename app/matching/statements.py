"""The interpreter's own errors at a known line: a record for the statement that raised them.

`KeyError: 'layers.35.mlp.gate.g_idx'` from `weights[name]`, `'NoneType' object has no
attribute 'cpu'`, `list index out of range`: no project's template holds these messages, the
interpreter writes them, and a template that copies its words (torch's datapipes, SGLang's
diffusion configs) is another project's. What names the site is the paste's innermost frame:
the file, the line and the function of an upstream release. Where no raise of the store is at
that line, the answer is a record for the statement there ("raised by the interpreter at
`vllm/...:123` in `f`: `x = d[key]`"), read from the release cache the harvest unpacked its
releases into, in the releases whose line holds the frame's source (the release the paste
names first).

Such a record is made while matching and kept in memory (`StatementRecords`), not written to
the store: one exists per statement and message a paste showed, and the store's version (and
every cache kept under it) stays as it was. GET /api/errors/{id} answers it from there.
"""

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from app import upstreams
from app.matching.tracebacks.model import Frame, ParsedException
from app.records.advice_fields import UNWRITTEN_ADVICE
from app.records.model import ID_LENGTH, SCHEMA_VERSION
from app.records.service import DRAFT, StoredRecord, canonical_json
from app.records.site_keys import release_order
from app.records.slug import slug
from app.upstreams import distribution_metadata
from app.upstreams.base import UpstreamProject

CONTEXT_LINES = 18  # as a harvested draft's excerpt (app.harvest.site_records)
KEPT_RECORDS = 4096  # statement records kept for GET; each is a few KB
MAX_MESSAGE = 2000
# The interpreter's own messages, per class: what a builtin operation raises, never a
# `raise` of a project's (a KeyError is the key's repr, whatever the key).
_INTERPRETER = {
    "KeyError": re.compile(r"(?s:.*)"),
    "AttributeError": re.compile(
        r"has no attribute '|^can't set attribute|^cannot set '|object attribute '.*' is read-only"
    ),
    "IndexError": re.compile(r"index out of range$|^pop from empty |^list assignment index"),
    "TypeError": re.compile(
        r"\(\) (?:got an unexpected keyword argument|missing [0-9]+ required|takes [0-9]+ "
        r"positional|takes from [0-9]+ to [0-9]+ positional|got multiple values for) |"
        r"' object is not (?:subscriptable|iterable|callable|a mapping|reversible)|"
        r"^unsupported operand type|not supported between instances of|^can only concatenate|"
        r"^object of type '.*' has no len\(\)|^argument of type '.*' is not iterable|"
        r"^unhashable type|^cannot unpack non-iterable|must be (?:str|int|real number), not"
    ),
    "ValueError": re.compile(
        r"^not enough values to unpack|^too many values to unpack|"
        r"^invalid literal for int\(\)|^could not convert string to float|is not in list$|"
        r"^math domain error$"
    ),
    "ZeroDivisionError": re.compile(r"division by zero|modulo by zero"),
    # The import system's, at an `import` line: the module or name the release imports is
    # missing from what is installed, or its compiled extension does not load (the dynamic
    # loader's words: a library it links missing, a symbol the installed torch lacks).
    "ModuleNotFoundError": re.compile(r"^No module named '"),
    "ImportError": re.compile(
        r"^cannot import name '|^No module named '|: cannot open shared object file: |"
        r": undefined symbol: |^DLL load failed while importing "
    ),
    "NameError": re.compile(r"^name '.*' is not defined"),
    "UnboundLocalError": re.compile(r"referenced before assignment|cannot access local variable"),
}
ReleaseRoot = Callable[[str, str], Path | None]
"""Where a release (distribution name, version) already lies on this machine, if it does: the
entry point hands down the release cache's (app.upstreams.release_cache.Upstream.cached_root)."""
MODULE = "<module>"  # a traceback's name for a module's own code
MOVED_LINES = 200  # how far a statement may have moved from the paste's line in a release
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)")
_RAISES = re.compile(r"^\s*(?:raise|assert)\b")


def interpreter_error(exception: ParsedException) -> bool:
    """Whether the interpreter wrote the exception's message (or the paste shows none of a
    builtin class the interpreter raises)."""
    words = _INTERPRETER.get(exception.error_class or "")
    message = exception.message.strip()
    return words is not None and (not message or words.search(message) is not None)


@dataclass(frozen=True, slots=True)
class Statement:
    """Where the interpreter raised, in the releases whose source holds the frame's line."""

    repo: str
    file_path: str  # the repository's path
    line: int
    function: str
    source: str
    releases: tuple[str, ...]  # `name==version`: at the pasted line, else near it
    lines: tuple[str, ...]  # the cited release's file


class StatementRecords:
    """The statement records made while matching, by id, the newest kept (GET answers
    them), and the release files they are read from."""

    def __init__(self, release_root: ReleaseRoot | None = None) -> None:
        self._release_root = release_root
        self._kept: OrderedDict[str, StoredRecord] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, record_id: str) -> StoredRecord | None:
        """A statement record a match made, if still kept."""
        with self._lock:
            return self._kept.get(record_id)

    def record(
        self,
        exception: ParsedException,
        harvested: Sequence[str],
        named: Mapping[str, str],
    ) -> StoredRecord | None:
        """The record of the statement at the exception's innermost frame, when that frame
        is an upstream's and a harvested release's source holds its line; kept for GET."""
        statement = self.statement(exception.frames[-1], harvested, named)
        if statement is None:
            return None
        return self.keep(_statement_record(statement, exception))

    def keep(self, record: StoredRecord) -> StoredRecord:
        """Keep a record a match made (a statement's, a kernel assertion's) for GET, the
        newest KEPT_RECORDS of them."""
        with self._lock:
            self._kept[record.id] = record
            self._kept.move_to_end(record.id)
            while len(self._kept) > KEPT_RECORDS:
                self._kept.popitem(last=False)
        return record

    def statement(
        self,
        frame: Frame,
        harvested: Sequence[str],
        named: Mapping[str, str],
        raising: bool = False,
    ) -> Statement | None:
        """The statement at `frame` in the harvested releases of its project whose file
        holds the frame's source at its line (any statement but a raise, when the paste
        shows no source); the release the paste names first, then the newest. With
        `raising`, the frame's own `raise` or `assert` statement instead (the paste must show
        it): where it is in a release whose line moved since the paste's, the record of the
        harvested site there is the one raised."""
        for project, package_path in _package_paths(frame.file):
            found = self._statement(frame, project, package_path, harvested, named, raising)
            if found is not None:
                return found
        return None

    def _statement(
        self,
        frame: Frame,
        project: UpstreamProject,
        package_path: str,
        harvested: Sequence[str],
        named: Mapping[str, str],
        raising: bool,
    ) -> Statement | None:
        wanted = frame.source.strip()
        if raising != bool(_RAISES.match(wanted)):
            return None  # the statement sought is not the kind the frame shows: no file is read
        prefix = project.distribution + "=="
        releases = sorted(
            (release for release in harvested if release.startswith(prefix)),
            key=release_order,
            reverse=True,
        )
        version = named.get(project.repo)
        if version is not None and prefix + version in releases:
            releases.remove(prefix + version)
            releases.insert(0, prefix + version)
        fitting: list[tuple[int, str, int, tuple[str, ...]]] = []
        for release in releases:
            lines = self._lines(release, package_path)
            line = None if lines is None else _statement_line(lines, frame, wanted, raising)
            if lines is None or line is None:
                continue
            fitting.append((abs(line - frame.line), release, line, lines))
            if not wanted:
                break  # without the source, the first release with a statement there says it
        if not fitting:
            return None
        # the release the paste names, else the release whose line is the frame's (newest
        # first), else the one where the statement moved least
        named_first = (
            fitting[0] if version is not None and fitting[0][1] == prefix + version else None
        )
        _, _, line, lines = named_first or min(fitting, key=lambda fit: fit[0])
        exact = [release for moved, release, _, _ in fitting if moved == 0]
        return Statement(
            repo=project.repo,
            file_path=upstreams.package_prefix(package_path.split("/")[0]) + package_path,
            line=line,
            function=frame.function,
            source=lines[line - 1].strip(),
            releases=tuple(exact or [release for _, release, _, _ in fitting]),
            lines=lines,
        )

    def _lines(self, release: str, package_path: str) -> tuple[str, ...] | None:
        """The release's file as lines, where the release lies here already (never
        downloaded while matching); a bundled package's file from the release of it that
        this one requires."""
        if self._release_root is None:
            return None
        name, _, version = release.partition("==")
        root = self._release_root(name, version)
        bundled = upstreams.BUNDLED.get(package_path.split("/")[0])
        if root is not None and bundled is not None:
            pinned = _pinned(root, name, bundled[1].distributions)
            root = None if pinned is None else self._release_root(*pinned)
        return None if root is None else _read_lines(root / package_path)


def _statement_line(
    lines: Sequence[str], frame: Frame, wanted: str, raising: bool = False
) -> int | None:
    """The line of the frame's statement in a release's file: the frame's own line when it
    holds the frame's source (or any statement but a raise, when the paste shows none),
    else the nearest line within MOVED_LINES that holds the source in the frame's function
    (the code moved between the paste's release and this one). With `raising` (the frame's
    source is then a `raise` or an `assert`), the same for that statement."""
    if 0 < frame.line <= len(lines):
        text = lines[frame.line - 1].strip()
        if text and (text == wanted or not (wanted or raising or _RAISES.match(text))):
            return frame.line
    if not wanted:
        return None
    near = [
        number
        for number in range(
            max(1, frame.line - MOVED_LINES), min(len(lines), frame.line + MOVED_LINES) + 1
        )
        if lines[number - 1].strip() == wanted
    ]
    for number in sorted(near, key=lambda number: abs(number - frame.line)):
        if not frame.function or _function_at(lines, number) == frame.function:
            return number
    return None


def _function_at(lines: Sequence[str], number: int) -> str | None:
    """The function whose `def` is the nearest above a line; `<module>`, as a traceback
    names it, for a line of the module's own code (not indented)."""
    if not lines[number - 1][:1].isspace():
        return MODULE
    for at in range(number - 1, -1, -1):
        found = _DEF.match(lines[at])
        if found is not None:
            return found[1]
    return None


@lru_cache(maxsize=256)
def _pinned(root: Path, distribution: str, names: tuple[str, ...]) -> tuple[str, str] | None:
    """The release of a bundled package that the release at `root` requires; a release
    never changes, so it is kept."""
    return distribution_metadata.pinned_requirement(root, distribution, names)


@lru_cache(maxsize=256)
def _read_lines(path: Path) -> tuple[str, ...] | None:
    """A release file's lines; a release never changes, so they are kept."""
    try:
        return tuple(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return None


def _package_paths(file: str) -> list[tuple[UpstreamProject, str]]:
    """The projects a frame's file may be of, with its path from the package's folder, the
    innermost package folder first: a checkout's `/workspace/sglang/python/sglang/srt/x.py`
    is `sglang/srt/x.py`, an installed `.../site-packages/vllm/worker/x.py` `vllm/worker/x.py`."""
    parts = file.replace("\\", "/").split("/")
    return [
        (project, "/".join(parts[at:]))
        for at in reversed(range(len(parts) - 1))
        if (project := upstreams.package_project(parts[at])) is not None
    ]


def _statement_record(statement: Statement, exception: ParsedException) -> StoredRecord:
    """The record of a statement and the message the interpreter raised there."""
    error_class = exception.error_class or "Exception"
    message = exception.message.strip()[:MAX_MESSAGE] or error_class
    where = f"`{statement.file_path}:{statement.line}` in `{statement.function or MODULE}`"
    key = "\0".join(["statement", statement.repo, statement.file_path, statement.source])
    key += "\0" + "\0".join([str(statement.line), error_class, message])
    cited = statement.releases[0]
    tag = "v" + cited.partition("==")[2]
    start = max(1, statement.line - CONTEXT_LINES)
    end = min(len(statement.lines), statement.line + CONTEXT_LINES)
    url = f"https://github.com/{statement.repo}/blob/{tag}/{statement.file_path}"
    record_id = hashlib.sha256(key.encode()).hexdigest()[:ID_LENGTH]
    document: dict[str, object] = {
        "id": record_id,
        "repo": statement.repo,
        "slug": slug(f"{error_class} {message}") or "statement",
        "errorCode": None,
        "errorMessage": message,
        "messagePattern": re.escape(message),
        "errorType": "exception",
        "errorClass": error_class,
        "httpStatus": None,
        "severity": "error",
        "filePath": statement.file_path,
        "lineNumber": statement.line,
        "sourceCode": "\n".join(statement.lines[start - 1 : end]),
        "sourceCodeStart": start,
        "sourceCodeEnd": end,
        "githubUrl": f"{url}#L{start}-L{end}",
        "documentation": (
            f"Raised by the interpreter at {where}: `{statement.source}`, not by a `raise` of "
            f"{statement.repo}: the statement's operation failed on the values it was given."
        ),
        "triggerScenarios": (
            f"Harvested releases whose {statement.file_path} holds this statement at the "
            f"pasted line, or else near it in the same function: "
            f"{', '.join(statement.releases)}."
        ),
        **UNWRITTEN_ADVICE,
        "tags": ["interpreter", slug(error_class) or "exception"],
        "backgroundTag": None,
        "analyzedSha": tag,
        "analyzedAt": None,
        "schemaVersion": SCHEMA_VERSION,
    }
    text = canonical_json(document)
    return StoredRecord.of(record_id, text, DRAFT, "statement", None)
