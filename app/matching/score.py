"""The components of a match's score: how well the pattern covers the message, and what else
of the paste agrees with the record.

The message alone is weak evidence: generic templates match many messages, and the same
message is raised from several files. So a score adds up what else agrees: how
much of the exception message the pattern covers and how specific it is, the exception
class, frames in the record's file (at its line, or moved), the raising function, the repo
the frames come from, and where the exception sits (the last one of a paste and the
innermost cause of a chain weigh more). Reviewed records win ties over drafts.

Every point a match gets comes from one named component (`Component`), and its score is the
sum of their points, so a reader can check a score by adding it up and see what to disagree
with. The text reasons say the same for a person and stay as they were. The points are
app.matching.score_weights.
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app import upstreams
from app.exception_classes import ancestors, relation
from app.matching import native
from app.matching.candidate import Candidate, Paste, makes_exceptions
from app.matching.index import Captures, PatternIndex
from app.matching.partial import Partial, unquoted
from app.matching.score_weights import (
    CLASS_AGREES,
    CLASS_DIFFERS,
    CLASS_RELATED,
    CUT_MIN,
    CUT_SPAN,
    FILE_IN_FRAMES,
    FILE_INNERMOST,
    FULL_LINE,
    FULL_MESSAGE,
    GENERIC_BELOW,
    GENERIC_TEMPLATE,
    LAST_EXCEPTION,
    LOG_LINE,
    LOG_LINE_ID,
    NEAR_MESSAGE,
    NEAR_PER_WORD,
    PARTIAL_MIN,
    PARTIAL_SPAN,
    POINTS_DIGITS,
    RAISED_BY_HELPER,
    RAISED_ELSEWHERE,
    RELEASE_AGREES,
    RELEASE_DIFFERS,
    REPO_AGREES,
    REPO_DIFFERS,
    ROOT_CAUSE,
    RUN_TIME_CLASSES,
    SAME_FUNCTION,
    SAME_LINE,
    SPECIFICITY_MAX,
    SPECIFICITY_PER_POINT,
)
from app.matching.tracebacks.model import ParsedException
from app.records.native_settings import has_no_python_frames
from app.records.site_keys import short_class

# A message in the interpreter's own words is generic too (GENERIC_BELOW), whatever the
# template's length: a record that copies them (torch's `{name}() got an unexpected keyword
# argument '{arg}'`) is not where a wrong call or a missing attribute was raised, nor one
# of the import system's (torch.package's `No module named '{name}'; '{parent}' is not a
# package`) where an import failed.
_INTERPRETER_WORDS = re.compile(
    r"\(\) (?:got an unexpected keyword argument|missing [0-9]+ required|takes [0-9]+ "
    r"positional|got multiple values for) |' object has no attribute '"
    r"|^No module named '[\w.]+'(?:; '[\w.]+' is not a package)?$"
    r"|^cannot import name '\w+' from '[\w.]+'"
)
_MINOR = re.compile(r"([0-9]+)\.([0-9]+)")


@dataclass(frozen=True, slots=True)
class Component:
    """One part of a match's score: what agreed or differed (`id`, stable for programs),
    the points it gave, rounded as the score is, and what it means to a reader."""

    id: str
    points: float
    hint: str


@dataclass(slots=True)
class Tally:
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

    def extend(self, other: "Tally") -> None:
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


def _message_variants(exception: ParsedException) -> list[str]:
    """The message, for KeyError-style reprs the string inside, and without the tail torch
    appends to every CUDA error; a ROCm build's in CUDA's words too."""
    variants = [exception.message]
    inner = unquoted(exception.message)
    if inner is not None:
        variants.append(inner)
    cuda = native.in_cuda_words(exception.message)
    for message in (exception.message, cuda):
        bare = native.without_tail(message) if message else None
        if bare and bare not in variants:
            variants.append(bare)
    if cuda is not None and cuda not in variants:
        variants.append(cuda)
    return variants


class MatchMemo:
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


def message_score(
    match: MatchMemo, candidate: Candidate, exception: ParsedException, line: str
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


def context_score(candidate: Candidate, exception: ParsedException, paste: Paste) -> Tally:
    """Points from everything but the message: class, frames, function, repo, position."""
    tally = Tally()
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
        elif has_no_python_frames(candidate.file_path):
            hint = "raised in native code, which the innermost frame calls into"
            tally.add("frames.native", 0, hint, said=False)
        elif makes_exceptions(frames[-1]) and not candidate.logged:  # see raised_elsewhere
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


def partial_component(partial: Partial) -> Component:
    """Points for the message of a wrapped, cut or near copy of the template."""
    if partial.kind == "wrapped":
        points = float(FULL_MESSAGE)
    elif partial.kind == "cut":
        points = CUT_MIN + CUT_SPAN * partial.share
    else:
        points = NEAR_MESSAGE - NEAR_PER_WORD * partial.changed
    return Component(f"message.{partial.kind}", points, partial.reason())


def too_generic(literal_characters: int, exception: ParsedException) -> bool:
    """Whether a template is too generic to name a site without a frame in its file."""
    return literal_characters < GENERIC_BELOW or bool(_INTERPRETER_WORDS.search(exception.message))


def generic_component(literal_characters: int) -> Component:
    """Points off a template too generic to name a site without a frame in its file."""
    hint = (
        f"a generic template ({literal_characters} literal characters) and no frame in its "
        "file: other code raises the same words"
    )
    return Component("message.generic", GENERIC_TEMPLATE, hint)


SPECIFICITY_ID = "message.specificity"


def specificity_component(literal_characters: int) -> Component:
    """Points for how much fixed text the pattern holds: a generic template says little."""
    points = min(SPECIFICITY_MAX, literal_characters / SPECIFICITY_PER_POINT)
    hint = f"the pattern holds {literal_characters} literal characters"
    return Component(SPECIFICITY_ID, points, hint)


def said(component: Component) -> Tally:
    """A tally of one component whose hint is also a text reason."""
    tally = Tally()
    tally.count(component)
    return tally


def log_line_score(
    candidate: Candidate, line: str, paste: Paste, levels: Mapping[str, str]
) -> Tally:
    """Points of a log site's record whose pattern matches a whole log line: the message,
    the level the line's prefix names against the record's, the log's repository and
    release."""
    tally = said(Component(LOG_LINE_ID, LOG_LINE, "pattern matches a whole log line"))
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
