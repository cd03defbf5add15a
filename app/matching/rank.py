"""Confirmed pattern hits + parsed exceptions -> scored matches, with reasons and captures.

The message alone is weak evidence: generic templates match many messages, and the same
message is raised from several files. So a score adds up what else agrees: how
much of the exception message the pattern covers and how specific it is, the exception
class, frames in the record's file (at its line, or moved), the raising function, the repo
the frames come from, and where the exception sits (the last one of a paste and the
innermost cause of a chain weigh more). Reviewed records win ties over drafts.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from app import upstreams
from app.classes import BUILTIN_GRAPH, ClassGraph, relation
from app.matching.index import Captures, PatternIndex
from app.matching.partial import Partial, unquoted
from app.matching.traceback import Frame, ParsedException
from app.records.locations import Location, message_template, raising_function, short_class
from app.records.model import ErrorRecord

# Weights, in points; a perfect match of a specific message with agreeing context is ~100.
FULL_MESSAGE = 40
FULL_LINE = 34
PARTIAL_MIN, PARTIAL_SPAN = 12, 14  # partial: 12 + 14 * share of the message covered
# A message that matches no template in full: cut by the end of the paste, it
# scores by the share of the template it shows; a near copy loses points per changed word.
CUT_MIN, CUT_SPAN = 12, 26
NEAR_MESSAGE, NEAR_PER_WORD = 32, 5
OUTSIDE_MESSAGE = 8  # a hit in a log line that no exception claims
IN_TRACEBACK_NOISE = 1  # a hit in a frame line (paths), almost always noise
SPECIFICITY_MAX, SPECIFICITY_PER_POINT = 15, 4
CLASS_AGREES, CLASS_DIFFERS = 15, -15
CLASS_RELATED = 6  # a subclass or superclass: renamed or refined between releases
FILE_IN_FRAMES, FILE_INNERMOST, SAME_LINE = 12, 6, 6
SAME_FUNCTION = 4
REPO_AGREES, REPO_DIFFERS = 5, -5
LAST_EXCEPTION, ROOT_CAUSE = 4, 4
# Being reviewed outweighs a line number: a draft that explains the text as well
# only because a frame sits on its exact line must not push the explained record down.
REVIEWED_BONUS, GONE_PENALTY = SAME_LINE + 1, -2
FRAMES_MARGIN = 0.5  # how far below a record from a frame's file the others are put (#15)
# Found by where it raises: a fully dynamic message has nothing else to go by, and
# a site raising at the very line of the innermost frame is strong evidence; a record whose
# template does not fit the message (the message changed) is weaker.
RAISED_HERE_DYNAMIC, RAISED_HERE_OTHER_MESSAGE = 34, 14
RUN_TIME_CLASSES = frozenset({"Exception", "BaseException"})  # neither agrees nor differs
NEEDS_FRAMES_BELOW = 12  # literal characters; fewer, and a frame must be in the record's file

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)[^{}]*\}")


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
    template: str = ""  # its message template: records raising the same one go together


@dataclass(slots=True)
class Match:
    """A record that explains an exception (or a log line) of the paste."""

    id: str
    score: float
    exception_index: int | None
    captures: dict[str, str | None]
    reasons: list[str] = field(default_factory=list)
    reviewed: bool = False
    in_frames: bool = False  # it explains the message and a frame is in its file
    same_message: list[str] = field(default_factory=list)  # ids raising the same message


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
        template=message_template(record.message_pattern, record.error_message),
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


def _frame_in_file(frame: Frame, suffixes: tuple[str, ...]) -> bool:
    path = "/" + frame.file.replace("\\", "/").lstrip("/")
    return path.endswith(suffixes)


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
    """The message, and for KeyError-style reprs the string inside."""
    inner = unquoted(exception.message)
    return [exception.message] if inner is None else [exception.message, inner]


def _message_score(
    index: PatternIndex, candidate: Candidate, exception: ParsedException, line: str
) -> tuple[float, Captures | None, str]:
    """How well the pattern covers the exception's message, and its captures."""
    for message in _message_variants(exception):
        found = index.match(candidate.id, message, full=True)
        if found is not None:
            return FULL_MESSAGE, found, "pattern matches the whole exception message"
    found = index.match(candidate.id, line, full=True)
    if found is not None:
        return FULL_LINE, found, "pattern matches a whole line of the exception message"
    found = index.match(candidate.id, exception.message)
    if found is None:
        return PARTIAL_MIN, None, "pattern found in the exception message"
    share = (found.span[1] - found.span[0]) / max(1, len(exception.message))
    return PARTIAL_MIN + PARTIAL_SPAN * share, found, f"pattern covers {share:.0%} of the message"


def _context_score(
    candidate: Candidate,
    exception: ParsedException,
    last_index: int,
    causes: set[int],
    graph: ClassGraph,
    log_repos: frozenset[str],
) -> tuple[float, list[str]]:
    """Points from everything but the message: class, frames, function, repo, position."""
    score, reasons = 0.0, []
    recorded = short_class(candidate.error_class)
    related = relation(exception.error_class, recorded, graph)
    if recorded == exception.error_class:
        score += CLASS_AGREES
        reasons.append(f"exception class {exception.error_class} agrees")
    elif candidate.error_class in RUN_TIME_CLASSES:
        reasons.append("the record's class is decided at run time")
    elif related is not None:
        score += CLASS_RELATED
        reasons.append(
            f"exception class {exception.error_class} is a {related} of {recorded}, which the "
            "record raises: the class was renamed or refined between releases"
        )
    else:
        score += CLASS_DIFFERS
        reasons.append(f"record raises {candidate.error_class}, not {exception.error_class}")
    frames = exception.frames
    if frames and candidate.file_path:
        in_file = _frames_in_files(candidate, frames)
        if in_file:
            score += FILE_IN_FRAMES
            if in_file[-1] is frames[-1]:
                score += FILE_INNERMOST
            frame = in_file[-1]
            if frame.line in candidate.lines:
                score += SAME_LINE
                release = candidate.lines[frame.line]
                where = f"the record's line in {release}" if release else "the record's line"
                reasons.append(f"raised at {candidate.file_path}:{frame.line}, {where}")
            else:
                reasons.append(
                    f"frame in {candidate.file_path} (line {frame.line}; "
                    f"the record says {candidate.line_number}: the code moved)"
                )
            if frame.function in candidate.functions:
                score += SAME_FUNCTION
                reasons.append(f"in function {frame.function}")
    repos = {repo for frame in frames if (repo := frame_repo(frame))}
    if candidate.repo in repos:
        score += REPO_AGREES
        reasons.append(f"frames come from {candidate.repo}")
    elif repos:
        score += REPO_DIFFERS
    elif (
        not frames and candidate.repo in log_repos
    ):  # no frames: only the log format names the repository
        score += REPO_AGREES
        reasons.append(f"the log's format and paths point at {candidate.repo}")
    if exception.index == last_index:
        score += LAST_EXCEPTION
        reasons.append("last exception of the paste")
    if exception.cause_index is None and exception.index in causes:
        score += ROOT_CAUSE
        reasons.append("innermost cause of the chain")
    return score, reasons


def _partial_score(partial: Partial) -> float:
    """Points for the message of a wrapped, cut or near copy of the template."""
    if partial.kind == "wrapped":
        return FULL_MESSAGE
    if partial.kind == "cut":
        return CUT_MIN + CUT_SPAN * partial.share
    return NEAR_MESSAGE - NEAR_PER_WORD * partial.changed


def _better(match: Match, other: Match) -> bool:
    """Higher score; on a tie, the later exception (what finally failed) explains more."""
    if match.score != other.score:
        return match.score > other.score
    return (match.exception_index or -1) > (other.exception_index or -1)


def _frames_in_files(candidate: Candidate, frames: Sequence[Frame]) -> list[Frame]:
    """The frames in the record's file, as written or in any harvested release."""
    files = candidate.files | ({candidate.file_path} if candidate.file_path else set())
    suffixes = [path_suffixes(file) for file in sorted(files)]
    return [frame for frame in frames if any(_frame_in_file(frame, s) for s in suffixes)]


def _frames_agree(candidate: Candidate, exception: ParsedException) -> bool:
    """Whether a frame of the exception is in the record's file."""
    return bool(candidate.file_path) and bool(_frames_in_files(candidate, exception.frames))


def _finish(
    candidate: Candidate,
    score: float,
    reasons: list[str],
    exception_index: int | None,
    captures: dict[str, str | None],
) -> Match:
    """The match, with the points every match gets: reviewed, or gone in a newer release."""
    if candidate.reviewed:
        score += REVIEWED_BONUS
        reasons.append("reviewed record: explained by a curator, ranked above drafts")
    else:
        reasons.append("draft record: not yet reviewed")
    if candidate.gone:
        score += GONE_PENALTY
        reasons.append("raise site gone in a newer release")
    return Match(
        candidate.id, round(score, 2), exception_index, captures, reasons, candidate.reviewed
    )


def rank(
    index: PatternIndex,
    hits: Sequence[tuple[str, int | None, str, bool]],
    candidates: dict[str, Candidate],
    exceptions: Sequence[ParsedException],
    raised_at: Sequence[tuple[str, int]] = (),
    partials: Sequence[tuple[str, int, Partial]] = (),
    graph: ClassGraph | None = None,
    log_repos: frozenset[str] = frozenset(),
) -> list[Match]:
    """Scored matches, best first, one per record.

    `hits` are (record id, exception index or None, the hit's clean line, whether the line
    is a message line of that exception); a hit outside any exception came from a log line.
    `raised_at` are (record id, exception index) of records whose raise site is the
    exception's innermost frame: found by where they raise, whatever the message says.
    `partials` are (record id, exception index, agreement) of templates that a message with
    no full match is a wrapped, cut or near copy of (app.matching.partial). `graph` holds
    the exception classes of the harvested releases, to tell related classes (app.classes);
    `log_repos` the repositories the paste's log format names (app.matching.origin).

    Then: for an exception with frames, a record that explains its message from a
    file some frame is in ranks above every record from elsewhere; and records that raise
    the same message with the same score go together under the first one.
    """
    graph = graph or BUILTIN_GRAPH
    last_index = exceptions[-1].index if exceptions else -1
    causes = {e.cause_index for e in exceptions if e.cause_index is not None}
    best: dict[str, Match] = {}

    def keep(match: Match) -> None:
        if match.id not in best or _better(match, best[match.id]):
            best[match.id] = match

    for record_id, exception_index, line, on_message in hits:
        candidate = candidates.get(record_id)
        if candidate is None:
            continue
        specificity = index.specificity(record_id)
        bonus = min(SPECIFICITY_MAX, specificity / SPECIFICITY_PER_POINT)
        if exception_index is not None and on_message:
            exception = exceptions[exception_index]
            if specificity < NEEDS_FRAMES_BELOW and not _frames_agree(candidate, exception):
                continue  # `{x} tensor` alone says too little to name a site
            score, found, why = _message_score(index, candidate, exception, line)
            explains = score >= FULL_LINE
            context, context_reasons = _context_score(
                candidate, exception, last_index, causes, graph, log_repos
            )
            score += context
            reasons = [why, *context_reasons]
        else:
            found = None  # captures come from a message, never from a log or frame line (#15)
            explains = False
            score = IN_TRACEBACK_NOISE if exception_index is not None else OUTSIDE_MESSAGE
            reasons = [
                "pattern found in a log line"
                if exception_index is None
                else "pattern found in a traceback frame line"
            ]
        captures = _captures(candidate, found) if explains else {}
        match = _finish(
            candidate, score + bonus, reasons, exception_index if on_message else None, captures
        )
        match.in_frames = (
            explains
            and exception_index is not None
            and _frames_agree(candidate, exceptions[exception_index])
        )
        keep(match)
    for record_id, exception_index, partial in partials:
        candidate = candidates.get(record_id)
        if candidate is None:
            continue
        exception = exceptions[exception_index]
        if partial.covered < NEEDS_FRAMES_BELOW and not _frames_agree(candidate, exception):
            continue
        context, context_reasons = _context_score(
            candidate, exception, last_index, causes, graph, log_repos
        )
        score = _partial_score(partial) + context
        score += min(SPECIFICITY_MAX, partial.covered / SPECIFICITY_PER_POINT)
        reasons = [partial.reason(), *context_reasons]
        match = _finish(candidate, score, reasons, exception_index, dict(partial.captures))
        match.in_frames = _frames_agree(candidate, exception)
        keep(match)
    for record_id, exception_index in raised_at:
        candidate = candidates.get(record_id)
        if candidate is None:
            continue
        exception = exceptions[exception_index]
        if record_id in index:
            score, why = (
                RAISED_HERE_OTHER_MESSAGE,
                ("raised at the record's site, but the message differs from its template"),
            )
        else:
            score, why = (
                RAISED_HERE_DYNAMIC,
                ("raised at the record's site, whose message is built at run time"),
            )
        context, context_reasons = _context_score(
            candidate, exception, last_index, causes, graph, log_repos
        )
        names = _PLACEHOLDER.findall(candidate.error_message)
        captures = {names[0]: exception.message} if record_id not in index and names else {}
        match = _finish(
            candidate, score + context, [why, *context_reasons], exception_index, captures
        )
        match.in_frames = True
        keep(match)
    ranked = _frames_first(list(best.values()))
    return _same_message(sorted(ranked, key=_order), candidates)


def _order(match: Match) -> tuple[float, bool, str]:
    return -match.score, not match.reviewed, match.id


def _frames_first(matches: list[Match]) -> list[Match]:
    """Below the lowest-scored record that explains an exception from a file in its frames,
    every other record of that exception: another repository's, or a file no frame is in,
    must not win on a generic message."""
    floors: dict[int, float] = {}
    for match in matches:
        if match.in_frames and match.exception_index is not None:
            index = match.exception_index
            floors[index] = min(floors.get(index, match.score), match.score)
    for match in matches:
        floor = floors.get(match.exception_index) if match.exception_index is not None else None
        if floor is not None and not match.in_frames and match.score >= floor:
            match.score = round(floor - FRAMES_MARGIN, 2)
            match.reasons.append(
                "ranked below the records raised in the files of the traceback's frames"
            )
    return matches


def _same_message(matches: list[Match], candidates: dict[str, Candidate]) -> list[Match]:
    """Records of one exception that raise the same message with the same class and score:
    nothing tells them apart, so they are shown together under the first ("the same message
    is raised at ...") instead of one of them winning by chance."""
    kept: list[Match] = []
    first: dict[tuple[int | None, str, str, float], Match] = {}
    for match in matches:
        candidate = candidates[match.id]
        key = (
            match.exception_index,
            short_class(candidate.error_class),
            candidate.template,
            match.score,
        )
        if match.exception_index is None or not candidate.template or key not in first:
            first.setdefault(key, match)
            kept.append(match)
            continue
        leader = first[key]
        leader.same_message.append(match.id)
        place = f"{candidate.file_path}:{candidate.line_number} ({candidate.repo})"
        leader.reasons.append(f"the same message is raised at {place}")
    return kept
