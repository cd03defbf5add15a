"""Confirmed pattern hits + parsed exceptions -> scored matches, with reasons and captures.

The message alone is weak evidence: generic templates match many messages, and the same
message is raised from several files. So a score adds up what else agrees: how
much of the exception message the pattern covers and how specific it is, the exception
class, frames in the record's file (at its line, or moved), the raising function, the repo
the frames come from, and where the exception sits (the last one of a paste and the
innermost cause of a chain weigh more). Reviewed records win ties over drafts.

Every point a match gets comes from one named component (`Component`), and its score is the
sum of their points, so a reader can check a score by adding it up and see what to disagree
with. The text reasons say the same for a person and stay as they were.
"""

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from app import upstreams
from app.classes import BUILTIN_GRAPH, ClassGraph, ancestors, relation
from app.matching import native
from app.matching.index import Captures, PatternIndex
from app.matching.libraries import WRONG_CALL, raised_by
from app.matching.partial import Partial, unquoted
from app.matching.tracebacks.model import Frame, ParsedException
from app.records.locations import (
    Location,
    called_helper,
    message_template,
    raising_function,
    short_class,
)
from app.records.model import ErrorRecord
from app.records.native_settings import is_native_file

# Weights, in points; a perfect match of a specific message with agreeing context is ~100.
FULL_MESSAGE = 40
FULL_LINE = 34
PARTIAL_MIN, PARTIAL_SPAN = 12, 14  # partial: 12 + 14 * share of the message covered
# A message that matches no template in full: cut by the end of the paste, it
# scores by the share of the template it shows; a near copy loses points per changed word.
CUT_MIN, CUT_SPAN = 12, 26
NEAR_MESSAGE, NEAR_PER_WORD = 32, 5
OUTSIDE_MESSAGE = 8  # a hit in a log line that no exception claims
# A log site's record whose pattern matches a whole log line: the line is its message, as a
# whole message is an exception's; the level the line's prefix names is its class.
LOG_LINE, LOG_LINE_ID = FULL_LINE, "message.log-line"
LOGGED_TYPES = frozenset({"log", "warning"})  # errorType of a log or warning site's record
IN_TRACEBACK_NOISE = 1  # a hit in a frame line (paths), almost always noise
SPECIFICITY_MAX, SPECIFICITY_PER_POINT = 15, 4
CLASS_AGREES, CLASS_DIFFERS = 15, -15
CLASS_RELATED = 6  # a subclass or superclass: renamed or refined between releases
FILE_IN_FRAMES, FILE_INNERMOST, SAME_LINE = 12, 6, 6
# Raised in code no frame of the record's file is in: the innermost frame is where a
# traceback's exception was raised, so a record elsewhere is at most a copy of the message
# (transformers' or pydantic's text in a vLLM model, a site that moved): a possibility only.
RAISED_ELSEWHERE = -30
# Raised in the raising helper the record's site calls with its message (SGLang's
# `raise_error_or_warn`): the helper's frame is innermost, as the record's own would be.
RAISED_BY_HELPER = FILE_INNERMOST
SAME_FUNCTION = 4
REPO_AGREES, REPO_DIFFERS = 5, -5
# The paste names a release (`vLLM API server version 0.6.3`): a record whose site that
# release raises against one it does not (the same message, moved from file to file).
RELEASE_AGREES, RELEASE_DIFFERS = 6, -6
LAST_EXCEPTION, ROOT_CAUSE = 4, 4
# Being reviewed outweighs a line number: a draft that explains the text as well
# only because a frame sits on its exact line must not push the explained record down.
REVIEWED_BONUS, GONE_PENALTY = SAME_LINE + 1, -2
GONE = "record.gone"
REVIEWED, DRAFT = "record.reviewed", "record.draft"
FRAMES_MARGIN = 0.5  # how far below a record from a frame's file the others are put
# Found by where it raises: a fully dynamic message has nothing else to go by, and
# a site raising at the very line of the innermost frame is strong evidence; a record whose
# template does not fit the message (the message changed) is weaker.
RAISED_HERE_DYNAMIC, RAISED_HERE_OTHER_MESSAGE = 34, 14
# From this score a match is "likely" (below it a possibility only). A paste that names the
# projects it comes from (frames, package paths, log prefixes, a banner, a `pip list` row)
# names the project of a likely answer: another project's record holds the message in the
# same words at most (SGLang's loader beside vLLM's, a Modal wrapper's vLLM paste answered
# by torch's profiler), and stays a possibility.
LIKELY = 50
# A record whose pattern matches a kernel's assertion line before a device-side assert: the
# site that failed, more specific than the CUDA error that reports it afterwards.
KERNEL_ASSERTION = 8
RUN_TIME_CLASSES = frozenset({"Exception", "BaseException"})  # neither agrees nor differs
NEEDS_FRAMES_BELOW = 12  # literal characters; fewer, and a frame must be in the record's file
# Fewer literal characters than this (`CUDA error: {error}`, `No module named {name}`): the
# template fits messages that other code (the CUDA driver, the interpreter, another
# project) raises in the same words, so without a frame in its file it is a possibility only.
GENERIC_BELOW, GENERIC_TEMPLATE = 24, -25
# So is a message in the interpreter's own words, whatever the template's length: a record
# that copies them (torch's `{name}() got an unexpected keyword argument '{arg}'`) is not
# where a wrong call or a missing attribute was raised.
_INTERPRETER_WORDS = re.compile(
    r"\(\) (?:got an unexpected keyword argument|missing [0-9]+ required|takes [0-9]+ "
    r"positional|got multiple values for) |' object has no attribute '"
)
# Named anew whenever the weights or the components change: scores are comparable only
# between results of the same version.
RANKING_VERSION = "2026-12-05.2"
POINTS_DIGITS = 2

_MINOR = re.compile(r"([0-9]+)\.([0-9]+)")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)[^{}]*\}")
# The standard library's files (`/usr/lib/python3.10/runpy.py`, `C:\Python39\lib\x.py`):
# where a worker's exception is re-raised (multiprocessing, concurrent.futures), not made.
_STDLIB = re.compile(r"[/\\]lib[/\\](?:python[0-9.]*[/\\])?[\w.]+(?:[/\\][\w.]+)*$", re.IGNORECASE)


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


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a match's score: what agreed or differed (`id`, stable for programs),
    the points it gave, rounded as the score is, and what it means to a reader."""

    id: str
    points: float
    hint: str


@dataclass(slots=True)
class _Tally:
    """The components of a score being built, and the text reasons said along the way."""

    components: list[Component] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def add(self, component_id: str, points: float, hint: str, *, said: bool = True) -> None:
        """Count a component, its points rounded as a score is (so that they add up to it
        exactly); `said`: its hint is also one of the text reasons."""
        self.components.append(Component(component_id, round(points, POINTS_DIGITS), hint))
        if said:
            self.reasons.append(hint)

    def count(self, component: Component, *, said: bool = True) -> None:
        self.add(component.id, component.points, component.hint, said=said)

    def extend(self, other: "_Tally") -> None:
        self.components += other.components
        self.reasons += other.reasons


def total(components: Sequence[Component]) -> float:
    """A score: its components' points added up."""
    return round(sum(component.points for component in components), POINTS_DIGITS)


@dataclass(slots=True)
class Match:
    """A record that explains an exception (or a log line) of the paste; its score is the
    total of its components."""

    id: str
    score: float
    exception_index: int | None
    captures: dict[str, str | None]
    reasons: list[str] = field(default_factory=list)
    components: list[Component] = field(default_factory=list)
    reviewed: bool = False
    in_frames: bool = False  # it explains the message and a frame is in its file
    message_points: float = 0.0  # what its message component gave: how well the text agrees
    same_message: list[str] = field(default_factory=list)  # ids raising the same message
    literal: int = 0  # the literal characters of its pattern: the more specific wins a tie
    logged: bool = False  # a log site's record: a raise of the same message goes first
    log_line: str | None = None  # the log line it was found in, outside any exception


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
    """The record's path, and without its first folder (SGLang's `python/`), as suffixes."""
    parts = file_path.split("/")
    suffixes = ["/" + file_path]
    if len(parts) > 2:
        suffixes.append("/" + "/".join(parts[1:]))
    return tuple(suffixes)


def frame_path(frame: Frame) -> str:
    """The frame's file as a path with forward slashes and a leading one, to compare its end
    with a record's path suffixes."""
    return "/" + frame.file.replace("\\", "/").lstrip("/")


def _captures(candidate: Candidate, found: Captures | None) -> dict[str, str | None]:
    """Named groups by name; unnamed ones named after the template's placeholders, in order."""
    if found is None:
        return {}
    if found.named:
        return dict(found.named)
    names = _PLACEHOLDER.findall(candidate.error_message)
    return {
        (names[i] if i < len(names) else f"group{i + 1}"): value
        for i, value in enumerate(found.groups)
    }


def _message_variants(exception: ParsedException) -> list[str]:
    """The message, for KeyError-style reprs the string inside, and without the tail torch
    appends to every CUDA error."""
    variants = [exception.message]
    inner = unquoted(exception.message)
    if inner is not None:
        variants.append(inner)
    bare = native.without_tail(exception.message)
    if bare and bare != exception.message:
        variants.append(bare)
    return variants


class _Matches:
    """PatternIndex.match for one ranking, each pattern and subject matched once: records of
    many releases share one pattern (an unchanged message), and each is scored against the
    same exception. Held for one paste only: nothing of a paste outlives its match."""

    def __init__(self, index: PatternIndex) -> None:
        self._index = index
        self._found: dict[tuple[str, str, bool], Captures | None] = {}

    def __call__(self, key: str, subject: str, full: bool = False) -> Captures | None:
        asked = (self._index.pattern(key), subject, full)
        if asked not in self._found:
            self._found[asked] = self._index.match(key, subject, full)
        return self._found[asked]


def _message_score(
    match: _Matches, candidate: Candidate, exception: ParsedException, line: str
) -> tuple[Component, Captures | None]:
    """How well the pattern covers the exception's message, and its captures."""
    for message in _message_variants(exception):
        found = match(candidate.id, message, full=True)
        if found is not None:
            hint = "pattern matches the whole exception message"
            return Component("message.full", FULL_MESSAGE, hint), found
    found = match(candidate.id, line, full=True)
    if found is not None:
        hint = "pattern matches a whole line of the exception message"
        return Component("message.full-line", FULL_LINE, hint), found
    found = match(candidate.id, exception.message)
    if found is None:
        hint = "pattern found in the exception message"
        return Component("message.partial", PARTIAL_MIN, hint), None
    share = (found.span[1] - found.span[0]) / max(1, len(exception.message))
    points = PARTIAL_MIN + PARTIAL_SPAN * share
    return Component("message.partial", points, f"pattern covers {share:.0%} of the message"), found


class _Paste:
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


def _context_score(candidate: Candidate, exception: ParsedException, paste: _Paste) -> _Tally:
    """Points from everything but the message: class, frames, function, repo, position."""
    tally = _Tally()
    recorded = short_class(candidate.error_class)
    if not exception.error_class:
        tally.add("class.unknown", 0, "the paste names no exception class")
    elif recorded == exception.error_class:
        tally.add("class.agrees", CLASS_AGREES, f"exception class {exception.error_class} agrees")
    elif candidate.error_class in RUN_TIME_CLASSES:
        tally.add("class.run-time", 0, "the record's class is decided at run time")
    elif exception.error_class in RUN_TIME_CLASSES and exception.error_class in ancestors(
        recorded, paste.graph
    ):
        hint = (
            f"exception class {exception.error_class} is a superclass of {recorded}, which the "
            "record raises: every error's class derives from it (older releases raised it "
            "bare), so it neither agrees nor differs"
        )
        tally.add("class.root", 0, hint)
    elif (related := relation(exception.error_class, recorded, paste.graph)) is not None:
        tally.add(
            "class.related",
            CLASS_RELATED,
            f"exception class {exception.error_class} is a {related} of {recorded}, which the "
            "record raises: the class was renamed or refined between releases",
        )
    else:
        hint = f"record raises {candidate.error_class}, not {exception.error_class}"
        tally.add("class.differs", CLASS_DIFFERS, hint)
    frames = exception.frames
    if frames and candidate.file_path:
        in_file = paste.frames_in_files(candidate, exception)
        if in_file:
            hint = f"a frame of the traceback is in the record's file {candidate.file_path}"
            tally.add("frames.file", FILE_IN_FRAMES, hint, said=False)
            if in_file[-1] is frames[-1]:
                hint = "the innermost frame is in the record's file"
                tally.add("frames.innermost", FILE_INNERMOST, hint, said=False)
            frame = in_file[-1]
            if frame.line in candidate.lines:
                release = candidate.lines[frame.line]
                where = f"the record's line in {release}" if release else "the record's line"
                hint = f"raised at {candidate.file_path}:{frame.line}, {where}"
                tally.add("frames.line", SAME_LINE, hint)
            else:
                hint = (
                    f"frame in {candidate.file_path} (line {frame.line}; "
                    f"the record says {candidate.line_number}: the code moved)"
                )
                tally.add("frames.line-moved", 0, hint)
            if frame.function in candidate.functions:
                tally.add("frames.function", SAME_FUNCTION, f"in function {frame.function}")
        elif candidate.calls is not None and frames[-1].function == candidate.calls:
            hint = (
                f"raised in {candidate.calls}, the helper the record's site calls with its message"
            )
            tally.add("frames.helper", RAISED_BY_HELPER, hint)
        elif is_native_file(candidate.file_path):
            hint = "raised in native code, which the innermost frame calls into"
            tally.add("frames.native", 0, hint, said=False)
        elif _makes_exceptions(frames[-1]):
            hint = (
                f"raised in {frames[-1].file}, and no frame is in the record's file: "
                "at most a copy of its message"
            )
            tally.add("frames.raised-elsewhere", RAISED_ELSEWHERE, hint)
    repos = paste.repos(exception)
    if candidate.repo in repos:
        tally.add("repo.agrees", REPO_AGREES, f"frames come from {candidate.repo}")
    elif repos:
        hint = f"frames come from {', '.join(sorted(repos))}, not {candidate.repo}"
        tally.add("repo.differs", REPO_DIFFERS, hint, said=False)
    elif not frames and candidate.repo in paste.log_repos:  # no frames: only the log names the repo
        hint = f"the log's format and paths point at {candidate.repo}"
        tally.add("repo.log", REPO_AGREES, hint)
    if named := paste.log_versions.get(candidate.repo):
        clue = _release_clue(candidate, named)
        if clue is not None:
            tally.count(clue)
    if exception.index == paste.last_index:
        tally.add("position.last", LAST_EXCEPTION, "last exception of the paste")
    if exception.cause_index is None and exception.index in paste.causes:
        tally.add("position.root-cause", ROOT_CAUSE, "innermost cause of the chain")
    return tally


def _minor(version: str) -> tuple[int, int] | None:
    """`0.6.6.post1` -> (0, 6): releases of one minor raise from the same files, and
    errkb harvests the last patch of each."""
    found = _MINOR.match(version)
    return (int(found[1]), int(found[2])) if found else None


def _release_clue(candidate: Candidate, named: str) -> Component | None:
    """Whether the release the paste names raises the record's site: it is within the
    releases its site is in (or newer, for a site still there); None when the record has no
    harvested release of that project to compare with."""
    project = upstreams.BY_REPO.get(candidate.repo)
    wanted = _minor(named)
    if project is None or wanted is None:
        return None
    prefix = project.distribution + "=="
    versions = sorted(
        (minor, version)
        for label in candidate.releases
        if label.startswith(prefix)
        and (minor := _minor(version := label.removeprefix(prefix))) is not None
    )
    if not versions:
        return None
    (first, oldest), (last, newest) = versions[0], versions[-1]
    span = oldest if oldest == newest else f"{oldest}–{newest}"
    if first <= wanted <= last or (wanted > last and not candidate.gone):
        hint = f"the paste names {project.distribution} {named}, whose site this is ({span})"
        return Component("release.agrees", RELEASE_AGREES, hint)
    hint = f"the paste names {project.distribution} {named}; this site is in {span} only"
    return Component("release.differs", RELEASE_DIFFERS, hint)


def _partial_component(partial: Partial) -> Component:
    """Points for the message of a wrapped, cut or near copy of the template."""
    if partial.kind == "wrapped":
        points = float(FULL_MESSAGE)
    elif partial.kind == "cut":
        points = CUT_MIN + CUT_SPAN * partial.share
    else:
        points = NEAR_MESSAGE - NEAR_PER_WORD * partial.changed
    return Component(f"message.{partial.kind}", points, partial.reason())


def _generic_for(literal_characters: int, exception: ParsedException) -> bool:
    """Whether a template is too generic to name a site without a frame in its file."""
    return literal_characters < GENERIC_BELOW or bool(_INTERPRETER_WORDS.search(exception.message))


def _generic(literal_characters: int) -> Component:
    """Points off a template too generic to name a site without a frame in its file."""
    hint = (
        f"a generic template ({literal_characters} literal characters) and no frame in its "
        "file: other code raises the same words"
    )
    return Component("message.generic", GENERIC_TEMPLATE, hint)


def _specificity(literal_characters: int) -> Component:
    """Points for how much fixed text the pattern holds: a generic template says little."""
    points = min(SPECIFICITY_MAX, literal_characters / SPECIFICITY_PER_POINT)
    hint = f"the pattern holds {literal_characters} literal characters"
    return Component("message.specificity", points, hint)


def _better(match: Match, other: Match) -> bool:
    """Higher score; on a tie, the later exception (what finally failed) explains more."""
    if match.score != other.score:
        return match.score > other.score
    return (match.exception_index or -1) > (other.exception_index or -1)


def _frames_in_files(candidate: Candidate, frames: Sequence[Frame]) -> list[Frame]:
    """The frames in the record's file, as written or in any harvested release."""
    return [frame for frame in frames if frame_path(frame).endswith(candidate.suffixes)]


def _makes_exceptions(frame: Frame) -> bool:
    """Whether an innermost frame is where its exception was made: any code but the
    standard library's re-raising of another process's or thread's error, and a file that
    is no file (`<frozen runpy>`, `<string>`)."""
    path = frame.file
    if path.startswith("<"):
        return False
    return "-packages" in path or _STDLIB.search(path) is None


def raised_elsewhere(candidate: Candidate, exception: ParsedException) -> bool:
    """Whether the exception's frames say it was raised in code no frame of the record's
    file is in (`frames.raised-elsewhere`): the record is at most a copy of its message. A
    C++ or CUDA site has no Python frame: any frame may be the call into it."""
    frames = exception.frames
    return (
        bool(frames)
        and bool(candidate.file_path)
        and not is_native_file(candidate.file_path)
        and not _frames_in_files(candidate, frames)
        and _makes_exceptions(frames[-1])
    )


def _finish(
    candidate: Candidate,
    tally: _Tally,
    exception_index: int | None,
    captures: dict[str, str | None],
) -> Match:
    """The match, with the points every match gets: reviewed, or gone in a newer release."""
    if candidate.reviewed:
        hint = "reviewed record: explained by a curator, ranked above drafts"
        tally.add(REVIEWED, REVIEWED_BONUS, hint)
    else:
        tally.add(DRAFT, 0, "draft record: not yet reviewed")
    if candidate.gone:
        tally.add(GONE, GONE_PENALTY, "raise site gone in a newer release")
    return Match(
        candidate.id,
        total(tally.components),
        exception_index,
        captures,
        tally.reasons,
        tally.components,
        candidate.reviewed,
        logged=candidate.logged,
    )


def _said(component: Component) -> _Tally:
    """A tally of one component whose hint is also a text reason."""
    tally = _Tally()
    tally.count(component)
    return tally


def rank(
    index: PatternIndex,
    hits: Sequence[tuple[str, int | None, str, bool]],
    candidates: dict[str, Candidate],
    exceptions: Sequence[ParsedException],
    raised_at: Sequence[tuple[str, int]] = (),
    partials: Sequence[tuple[str, int, Partial]] = (),
    graph: ClassGraph | None = None,
    log_repos: frozenset[str] = frozenset(),
    log_versions: Mapping[str, str] | None = None,
    log_levels: Mapping[str, str] | None = None,
    statements: Sequence[tuple[str, int]] = (),
) -> list[Match]:
    """Scored matches, best first, one per record.

    `hits` are (record id, exception index or None, the hit's clean line, whether the line
    is a message line of that exception); a hit outside any exception came from a log line.
    `raised_at` are (record id, exception index) of records whose raise site is the
    exception's innermost frame: found by where they raise, whatever the message says.
    `partials` are (record id, exception index, agreement) of templates that a message with
    no full match is a wrapped, cut or near copy of (app.matching.partial). `graph` holds
    the exception classes of the harvested releases, to tell related classes (app.classes);
    `log_repos` the repositories the paste's log format names, `log_versions` the release
    of a repository it names (app.matching.origin), `log_levels` the level each log line's
    prefix names (clean text -> WARNING, ERROR, CRITICAL; app.matching.logtext).
    `statements` are (record id, exception index) of the records of the statement at an
    exception's innermost frame where the interpreter raised it (app.matching.statements):
    kept unless a record of the frames' files explains the message.

    Then: for an exception with frames, a record that explains its message from a
    file some frame is in ranks above every record from elsewhere; and records that raise
    the same message with the same score go together under the first one.
    """
    paste = _Paste(exceptions, graph or BUILTIN_GRAPH, log_repos, log_versions or {})
    asserted = native.device_side_assert(exceptions)
    best: dict[str, Match] = {}
    matches = _Matches(index)

    def keep(match: Match) -> None:
        if match.id not in best or _better(match, best[match.id]):
            best[match.id] = match

    for record_id, exception_index, line, on_message in hits:
        candidate = candidates.get(record_id)
        if candidate is None or native.is_tail_line(line.strip()):
            continue  # the CUDA errors' common tail names none of them
        specificity = index.specificity(record_id)
        if exception_index is None and asserted is not None and native.is_kernel_assertion(line):
            exception_index, on_message = asserted, True
            found = matches(record_id, line)
            explains = found is not None
            hint = "pattern matches the kernel assertion printed before the device-side assert"
            tally = _said(
                Component("message.kernel-assertion", FULL_MESSAGE + KERNEL_ASSERTION, hint)
            )
            tally.extend(_context_score(candidate, exceptions[asserted], paste))
        elif exception_index is not None and on_message:
            exception = exceptions[exception_index]
            in_frames = paste.frames_agree(candidate, exception)
            if specificity < NEEDS_FRAMES_BELOW and not in_frames:
                continue  # `{x} tensor` alone says too little to name a site
            message, found = _message_score(matches, candidate, exception, line)
            explains = message.points >= FULL_LINE
            tally = _said(message)
            if _generic_for(specificity, exception) and not in_frames:
                tally.count(_generic(specificity))
            tally.extend(_context_score(candidate, exception, paste))
        elif (
            exception_index is None
            and candidate.logged
            and not exceptions  # beside a traceback, a logged line is context (as below)
            and specificity >= NEEDS_FRAMES_BELOW
            and (found := matches(record_id, line.strip(), full=True))
        ):
            explains = True  # a log site's message is the whole line: its captures are real
            tally = _log_line_score(candidate, line.strip(), paste, log_levels or {})
            if specificity < GENERIC_BELOW:
                tally.count(_generic(specificity))
        else:
            found = None  # captures come from a message, never from a log or frame line
            explains = False
            tally = _Tally()
            if exception_index is None:
                tally.add("message.in-log-line", OUTSIDE_MESSAGE, "pattern found in a log line")
            else:
                hint = "pattern found in a traceback frame line"
                tally.add("message.in-frame-line", IN_TRACEBACK_NOISE, hint)
        tally.count(_specificity(specificity), said=False)
        captures = _captures(candidate, found) if explains else {}
        match = _finish(candidate, tally, exception_index if on_message else None, captures)
        match.message_points = tally.components[0].points
        match.literal = specificity
        match.log_line = line.strip() if exception_index is None else None
        match.in_frames = (
            explains
            and exception_index is not None
            and paste.frames_agree(candidate, exceptions[exception_index])
        )
        keep(match)
    for record_id, exception_index, partial in partials:
        candidate = candidates.get(record_id)
        if candidate is None:
            continue
        exception = exceptions[exception_index]
        in_frames = paste.frames_agree(candidate, exception)
        if partial.covered < NEEDS_FRAMES_BELOW and not in_frames:
            continue
        tally = _said(_partial_component(partial))
        if _generic_for(partial.covered, exception) and not in_frames:
            tally.count(_generic(partial.covered))
        tally.extend(_context_score(candidate, exception, paste))
        tally.count(_specificity(partial.covered), said=False)
        match = _finish(candidate, tally, exception_index, dict(partial.captures))
        match.message_points = tally.components[0].points
        match.literal = partial.covered
        match.in_frames = in_frames
        keep(match)
    for record_id, exception_index in raised_at:
        candidate = candidates.get(record_id)
        if candidate is None:
            continue
        exception = exceptions[exception_index]
        if record_id in index:
            site = Component(
                "site.raised-here-other-message",
                RAISED_HERE_OTHER_MESSAGE,
                "raised at the record's site, but the message differs from its template",
            )
        else:
            site = Component(
                "site.raised-here-dynamic",
                RAISED_HERE_DYNAMIC,
                "raised at the record's site, whose message is built at run time",
            )
        tally = _said(site)
        tally.extend(_context_score(candidate, exception, paste))
        names = _PLACEHOLDER.findall(candidate.error_message)
        captures = {names[0]: exception.message} if record_id not in index and names else {}
        match = _finish(candidate, tally, exception_index, captures)
        match.message_points = site.points
        match.in_frames = True
        keep(match)
    explained = {
        match.exception_index
        for match in best.values()
        if match.in_frames and match.message_points >= FULL_LINE
    }
    for record_id, exception_index in statements:
        candidate = candidates.get(record_id)
        if candidate is None or exception_index in explained:
            continue
        exception = exceptions[exception_index]
        tally = _said(
            Component(
                "site.statement",
                RAISED_HERE_DYNAMIC,
                "raised by the interpreter at the statement of the innermost frame, "
                "where no raise is",
            )
        )
        tally.extend(_context_score(candidate, exception, paste))
        match = _finish(candidate, tally, exception_index, {})
        if WRONG_CALL.search(exception.message) and match.score >= LIKELY:
            hint = (
                "a wrong call: the interpreter raised it at the caller's statement, but the "
                "callee's signature (another package's release, often) decides it: a "
                "possibility only"
            )
            _put_below(match, LIKELY, "site.wrong-call", hint)
        match.message_points = RAISED_HERE_DYNAMIC
        match.literal = len(candidate.error_message)  # its pattern is the message, literal
        match.in_frames = True
        keep(match)
    _named_projects_only(list(best.values()), candidates, paste, exceptions)
    _libraries_own_words(list(best.values()), exceptions)
    ranked = _literal_before_helpers(_frames_first(list(best.values())))
    ranked = _exceptions_first(ranked, lambda key, line: matches(key, line, full=True) is not None)
    return _same_message(sorted(ranked, key=_order), candidates)


def _named_projects_only(
    matches: Sequence[Match],
    candidates: Mapping[str, Candidate],
    paste: _Paste,
    exceptions: Sequence[ParsedException],
) -> None:
    """Below LIKELY, every record of a project the paste does not name when it names some:
    by the repositories of its frames, its log's format and paths (app.matching.origin), or
    a release it names."""
    named = set(paste.log_repos) | set(paste.log_versions)
    for exception in exceptions:
        named |= paste.repos(exception)
    if not named:
        return
    for match in matches:
        repo = candidates[match.id].repo
        if match.score >= LIKELY and repo not in named:
            hint = f"the paste names {', '.join(sorted(named))}, not {repo}: a possibility only"
            _put_below(match, LIKELY, "repo.not-named", hint)


def _libraries_own_words(matches: Sequence[Match], exceptions: Sequence[ParsedException]) -> None:
    """Below LIKELY, every record of an exception that a library outside the upstreams
    raised (app.matching.libraries) but in whose file no frame is: it holds the library's
    words at most."""
    libraries = {e.index: library for e in exceptions if (library := raised_by(e)) is not None}
    for match in matches:
        library = (
            libraries.get(match.exception_index) if match.exception_index is not None else None
        )
        if library is not None and not match.in_frames and match.score >= LIKELY:
            hint = f"raised by {library}: the record holds its words at most, a possibility only"
            _put_below(match, LIKELY, "message.library", hint)


def _order(match: Match) -> tuple[float, bool, bool, int, str]:
    """Best first: the score; on a tie, a reviewed record, then a raise over a log site
    of the same message (code that logs a message and raises it, SGLang's NaN check, is
    pasted for the exception), then the pattern with more literal text (`The number of
    required GPUs exceeds ...` over the later `The number of required {device_str}s
    exceeds ...` that the same message also fits: specificity's points stop at 60
    characters)."""
    return -match.score, not match.reviewed, match.logged, -match.literal, match.id


def _log_line_score(
    candidate: Candidate, line: str, paste: _Paste, levels: Mapping[str, str]
) -> _Tally:
    """Points of a log site's record whose pattern matches a whole log line: the message,
    the level the line's prefix names against the record's, the log's repository and
    release."""
    tally = _said(Component(LOG_LINE_ID, LOG_LINE, "pattern matches a whole log line"))
    level = levels.get(line)
    if level is None:
        tally.add("class.unknown", 0, "the log line names no level")
    elif level == candidate.error_class or (
        level == "WARNING" and candidate.error_class.endswith("Warning")
    ):
        tally.add(
            "class.agrees", CLASS_AGREES, f"logged at level {level}, as the record's site logs"
        )
    else:
        hint = f"record logs at {candidate.error_class}, not {level}"
        tally.add("class.differs", CLASS_DIFFERS, hint)
    if candidate.repo in paste.log_repos:
        tally.add("repo.log", REPO_AGREES, f"the log's format and paths point at {candidate.repo}")
    if named := paste.log_versions.get(candidate.repo):
        clue = _release_clue(candidate, named)
        if clue is not None:
            tally.count(clue)
    return tally


def _exceptions_first(matches: list[Match], whole: Callable[[str, str], bool]) -> list[Match]:
    """Below the best record of a raise that the paste shows, every log site's record that
    would outrank it: one of a log line, and one that fits an exception's message in another
    class (`Error in request: {e}` around the exception it logs). A raise is shown by an
    exception it explains, or by its message inside a log line (`Error in request:
    Unsupported tool_call_parser: None`, `[multiproc_executor.py:492] ValueError: ...`) that
    is not the whole of a line a log site's record fits (`whole(record id, line)`: a message
    logged and raised in the same words is the log's there). A warning's record whose
    category the paste names keeps its place, as does any log site's record when the paste
    shows no raise."""
    logged_lines = {m.log_line for m in matches if m.logged and m.components[0].id == LOG_LINE_ID}
    raised = [
        match.score
        for match in matches
        if not match.logged
        and (
            match.exception_index is not None
            or (
                match.message_points >= OUTSIDE_MESSAGE
                and match.log_line is not None
                and not (match.log_line in logged_lines and whole(match.id, match.log_line))
            )
        )
    ]
    if not raised:
        return matches
    ceiling = max(raised)
    for match in matches:
        if not match.logged or match.score < ceiling:
            continue
        named = any(part.id == "class.agrees" for part in match.components)
        if match.exception_index is None or not named:
            hint = "ranked below the record of the raise the paste shows"
            _put_below(match, ceiling, "rank.below-exception", hint)
    return matches


def _frames_first(matches: list[Match]) -> list[Match]:
    """Below the lowest-scored record that explains an exception from a file in its frames,
    every other record of that exception: another repository's, or a file no frame is in,
    must not win on a generic message.

    Except a record whose pattern matches the whole message when no record of the frames'
    files does: the frames then only locate a site whose message changed (or one line of
    it), and the paste's literal text is the stronger clue: the site moved to a file the
    frames do not name (an older release's), or the frames are a wrapper's.
    """
    floors: dict[int, float] = {}
    located_message: dict[int, float] = {}
    for match in matches:
        if match.in_frames and match.exception_index is not None:
            index = match.exception_index
            floors[index] = min(floors.get(index, match.score), match.score)
            located_message[index] = max(located_message.get(index, 0.0), match.message_points)
    for match in matches:
        at = match.exception_index
        floor = floors.get(at) if at is not None else None
        if at is None or floor is None or match.in_frames or match.score < floor:
            continue
        if match.message_points >= FULL_MESSAGE > located_message[at]:
            continue
        hint = "ranked below the records raised in the files of the traceback's frames"
        _put_below(match, floor, "rank.below-frames", hint)
    return matches


def _put_below(match: Match, score: float, component: str, hint: str) -> None:
    """Lower the match to just under `score` by a component of its own, so that its score
    still adds up."""
    tally = _Tally(match.components, match.reasons)
    tally.add(component, score - FRAMES_MARGIN - match.score, hint)
    match.score = total(match.components)


def _literal_before_helpers(matches: list[Match]) -> list[Match]:
    """Below the best record whose literal text matches an exception's whole message, every
    record of that exception without literal text: a helper that raises whatever message it
    is given (`raise ValueError(message)` in SGLang's `raise_error_or_warn`) is where the
    raise happened, not what it says; the record of the caller that wrote the text is."""
    best: dict[int, float] = {}
    for match in matches:
        if (
            match.exception_index is not None
            and match.literal
            and match.message_points >= FULL_MESSAGE
        ):
            index = match.exception_index
            best[index] = max(best.get(index, match.score), match.score)
    for match in matches:
        ceiling = best.get(match.exception_index) if match.exception_index is not None else None
        if ceiling is None or match.literal or match.score < ceiling:
            continue
        hint = "ranked below the record whose literal text matches the whole message"
        _put_below(match, ceiling, "rank.below-literal", hint)
    return matches


WHOLE = "\x00whole message"  # the key of the templates that match a whole message
_NOT_CLUES = frozenset({GONE, REVIEWED, DRAFT})  # points the paste itself did not earn


def _same_message(matches: list[Match], candidates: dict[str, Candidate]) -> list[Match]:
    """Records of one exception (or one log line) that raise the same message with the same
    score: nothing tells them apart, so they are shown together under the first ("the same
    message is raised at ...") instead of one of them winning by chance. Their classes may differ (a
    class refined between releases) where the paste names none, or one neither raises: a
    pasted class one of them raises scores them apart.

    A site gone in the newest release scores a little less, and a curated record a little
    more, yet neither says anything of the release the paste came from: the same message
    raised from another file in an older release goes with the current one (a curated record
    first) unless a clue of the paste (frames, a release it names) scored them apart."""
    kept: list[Match] = []
    first: dict[tuple[int | None, str | None, str, float], Match] = {}
    for match in matches:
        candidate = candidates[match.id]
        # Templates that both match the whole message are the same message to this paste,
        # whatever else they may add elsewhere (an optional tail it does not show).
        message = WHOLE if match.message_points >= FULL_MESSAGE else candidate.template
        key = (
            match.exception_index,
            match.log_line,  # a log line's records go together too (SGLang's NaN check)
            message,
            total([part for part in match.components if part.id not in _NOT_CLUES]),
        )
        outside = match.exception_index is None and match.log_line is None
        if outside or not candidate.template or key not in first:
            first.setdefault(key, match)
            kept.append(match)
            continue
        leader = first[key]
        leader.same_message.append(match.id)
        place = f"{candidate.file_path}:{candidate.line_number} ({candidate.repo})"
        leader.reasons.append(f"the same message is raised at {place}")
    return kept
