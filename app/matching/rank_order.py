"""Scored matches -> the order they are shown in: the adjustments that put one match below
another whatever their points (a record of the frames' files above the rest, a raise above a
log site, literal text above a helper, a project the paste names above one it does not),
each by a component of its own, so that a score still adds up; then best first, with the
records that raise the same message together under the first.
"""

import re
from collections.abc import Callable, Mapping, Sequence

from app import upstreams
from app.matching.candidate import Candidate, Paste, raised_below
from app.matching.libraries import raised_by
from app.matching.score import SPECIFICITY_ID, Match, Tally, total
from app.matching.score_weights import (
    DRAFT_COMPONENT,
    FRAMES_MARGIN,
    FULL_LINE,
    FULL_MESSAGE,
    GENERIC_BELOW,
    GONE_COMPONENT,
    LIKELY,
    LOG_LINE_ID,
    OUTSIDE_MESSAGE,
    REVIEWED_COMPONENT,
)
from app.matching.tracebacks.model import ParsedException


def named_projects(paste: Paste, exceptions: Sequence[ParsedException]) -> set[str]:
    """The projects a paste names: by the repositories of its frames, its log's format and
    paths (app.matching.origin), or a release it names."""
    named = set(paste.log_repos) | set(paste.log_versions)
    for exception in exceptions:
        named |= paste.repos(exception)
    return named


def named_projects_only(
    matches: Sequence[Match], candidates: Mapping[str, Candidate], named: set[str]
) -> None:
    """Below LIKELY, every record of a project the paste does not name (`named_projects`)
    when it names some."""
    if not named:
        return
    for match in matches:
        repo = candidates[match.id].repo
        if match.score >= LIKELY and repo not in named:
            hint = f"the paste names {', '.join(sorted(named))}, not {repo}: a possibility only"
            put_below(match, LIKELY, "repo.not-named", hint)


def libraries_own_words(matches: Sequence[Match], exceptions: Sequence[ParsedException]) -> None:
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
            put_below(match, LIKELY, "message.library", hint)


# A logged value that is another error as Python renders it: `KVTransferError(bootstrap_room=
# 1655955501905217457): Failed due to an unknown reason from another rank`, `ValueError: ...`.
_LOGGED_ERROR = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?:\([^\n]*?\))?: \S"
)


# A template's value that holds a caught exception, as code names it (`with exception {e}`).
_ERROR_VALUE = re.compile(r"\{(?:e|ex|exc|err|error|exception)\}")


def wrappers_below_likely(matches: Sequence[Match], candidates: Mapping[str, Candidate]) -> None:
    """Below LIKELY, every log site's record whose value is another error (`Decode transfer
    failed for request ... with exception {e}` showing `KVTransferError(...): ...`, or, where
    the text fit it only nearly and no value was read, a template whose value is a caught
    exception): it says where that error was caught and logged, not what raised it."""
    for match in matches:
        if not match.logged or match.score < LIKELY:
            continue
        values = [value for value in match.captures.values() if value]
        if values:
            wraps = any(_LOGGED_ERROR.match(value) for value in values)
        else:
            wraps = _ERROR_VALUE.search(candidates[match.id].error_message) is not None
        if wraps:
            hint = "the line logs another error: where it was caught, a possibility only"
            put_below(match, LIKELY, "log.wraps-error", hint)


def copies_below_likely(
    matches: Sequence[Match], candidates: Mapping[str, Candidate], raised_from: Mapping[int, str]
) -> None:
    """Below LIKELY, every record of torch's for an exception whose `Exception raised from ...
    at FILE:LINE` line names another project's C++ source (flash-attn's `flash_api.cpp`):
    that project raised it, and torch's library holds the same words as a copy at most."""
    for match in matches:
        path = raised_from.get(match.exception_index) if match.exception_index is not None else None
        if path is None or match.score < LIKELY or candidates[match.id].repo != upstreams.TORCH:
            continue
        name = path.replace("\\", "/").rpartition("/")[2]
        hint = f"raised from {name}, no source of torch's: torch holds a copy of its words at most"
        put_below(match, LIKELY, "native.raised-elsewhere", hint)


def callers_below_likely(
    matches: Sequence[Match],
    candidates: Mapping[str, Candidate],
    exceptions: Sequence[ParsedException],
) -> None:
    """Below LIKELY, every record of a raise whose exception the innermost frame made in
    another file, a library's or the same project's (`raised_below`): a frame in the
    record's file only called into that code, so its words there are a likeness, not the
    site."""
    for match in matches:
        if match.score < LIKELY or match.exception_index is None or candidates[match.id].logged:
            continue
        frames = exceptions[match.exception_index].frames
        if frames and raised_below(candidates[match.id], frames):
            innermost = frames[-1]
            hint = (
                f"made by `{innermost.source.strip()[:60]}` in {innermost.file}, below the "
                "record's file: a possibility only"
            )
            put_below(match, LIKELY, "frames.raised-below", hint)


def best_first(match: Match) -> tuple[float, bool, bool, int, str]:
    """Best first: the score; on a tie, a reviewed record, then a raise over a log site
    of the same message (code that logs a message and raises it, SGLang's NaN check, is
    pasted for the exception), then the pattern with more literal text (`The number of
    required GPUs exceeds ...` over the later `The number of required {device_str}s
    exceeds ...` that the same message also fits: specificity's points stop at 60
    characters)."""
    return -match.score, not match.reviewed, match.logged, -match.literal, match.id


def exceptions_first(
    matches: list[Match],
    found: Callable[[str, str, bool], bool],
    foreign: Callable[[str], bool],
) -> list[Match]:
    """Below the best record of a raise that the paste shows, every log site's record that
    would outrank it: one of a log line, and one that fits an exception's message in another
    class (`Error in request: {e}` around the exception it logs). A raise is shown by an
    exception it explains (in full, or by a template specific enough: a generic one's words
    found in part of a message, `{x} is not supported`, show no raise), or by its message
    inside a log line (`Error in request:
    Unsupported tool_call_parser: None`, `[multiproc_executor.py:492] ValueError: ...`) that
    is not the whole of a line a log site's record fits (`found(record id, text, whole)`: a
    message logged and raised in the same words is the log's there), where the message is
    specific or lies in a value of the log site's record that fits the line (`Exception in
    worker ...: {e}`): a generic template's words (`dtype={dtype}`, `not supported`) turn up
    in lines no raise printed (`Load weight end. type=..., dtype=torch.bfloat16`). A
    warning's record whose category the paste names keeps its place, as does any log site's
    record when the paste shows no raise. A message inside a log line shows no raise of a
    serving project the paste does not name (`foreign(record id)`): SGLang's `Ignore import
    error when loading ...: No module named '...'` is SGLang's log line, not vLLM's copy of
    the interpreter's words (torch, under both, raises inside either's log lines)."""
    values: dict[str, list[str]] = {}  # what the log sites' records fitting a line capture
    for logged in matches:
        if logged.logged and logged.components[0].id == LOG_LINE_ID and logged.log_line:
            captured = [value for value in logged.captures.values() if value]
            values.setdefault(logged.log_line, []).extend(captured)

    def shown(match: Match) -> bool:
        if match.logged:
            return False
        if match.exception_index is not None:  # a generic template's words in part of it
            return match.message_points >= FULL_LINE or match.literal >= GENERIC_BELOW
        line = match.log_line
        if line is None or match.message_points < OUTSIDE_MESSAGE or foreign(match.id):
            return False
        if line in values and found(match.id, line, True):
            return False
        return match.literal >= GENERIC_BELOW or any(
            found(match.id, value, False) for value in values.get(line, ())
        )

    raised = [match.score for match in matches if shown(match)]
    if not raised:
        return matches
    ceiling = max(raised)
    for match in matches:
        if not match.logged or match.score < ceiling:
            continue
        named = any(part.id == "class.agrees" for part in match.components)
        if match.exception_index is None or not named:
            hint = "ranked below the record of the raise the paste shows"
            put_below(match, ceiling, "rank.below-exception", hint)
    return matches


def frames_first(matches: list[Match]) -> list[Match]:
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
        put_below(match, floor, "rank.below-frames", hint)
    return matches


# A message that only points at an error shown above it: vLLM's EngineDeadError
# (`EngineCore encountered an issue. See stack trace (above) for the root cause.`) and its
# engine's start (`Engine core initialization failed. See root cause above.`, `Engine process
# failed to start. See stack trace for the root cause.`).
_POINTS_AT_CAUSE = re.compile(
    r"\b[Ss]ee (?:root cause above|stack trace (?:\(above\) )?for the root cause)"
)


def causes_first(matches: list[Match], exceptions: Sequence[ParsedException]) -> list[Match]:
    """Below the best likely record of another exception of the paste, the records of an
    exception whose message only points at the error above it: where the paste shows that
    error, it is what failed; where it does not, the pointer's record is the answer."""
    pointers = {
        index
        for index, exception in enumerate(exceptions)
        if _POINTS_AT_CAUSE.search(exception.message)
    }
    causes = [
        match.score
        for match in matches
        if match.exception_index is not None
        and match.exception_index not in pointers
        and match.score >= LIKELY
    ]
    if not pointers or not causes:
        return matches
    ceiling = max(causes)
    for match in matches:
        if match.exception_index in pointers and match.score >= ceiling:
            hint = "ranked below the record of the error the message points at, shown above"
            put_below(match, ceiling, "rank.below-cause", hint)
    return matches


KERNEL_CHECK = "message.kernel-assertion"


def checks_with_their_report(
    matches: list[Match], candidates: Mapping[str, Candidate]
) -> list[Match]:
    """A kernel's failed check and the CUDA error the next call reports it with are one
    answer (`Assertion `srcIndex < srcSelectDimSize` failed.`, then `CUDA error: device-side
    assert triggered`): the check's record names the site, so it leads, in the place of
    whichever of the two ranked first, and the report's best record goes with it."""
    checks = [
        match
        for match in matches
        if match.exception_index is not None and match.components[0].id == KERNEL_CHECK
    ]
    if not checks:
        return matches
    lead = checks[0]
    reports = [
        match
        for match in matches
        if match.exception_index == lead.exception_index and match.components[0].id != KERNEL_CHECK
    ]
    if not reports:
        return matches
    report = reports[0]
    candidate = candidates[report.id]
    lead.same_message.append(report.id)
    lead.reasons.append(
        f"the next CUDA call reports it: {candidate.file_path}:{candidate.line_number} "
        f"({candidate.repo})"
    )
    place = min(matches.index(lead), matches.index(report))
    kept = [match for match in matches if match is not lead and match is not report]
    kept.insert(place, lead)
    return kept


def put_below(match: Match, score: float, component: str, hint: str) -> None:
    """Lower the match to just under `score` by a component of its own, so that its score
    still adds up."""
    tally = Tally(match.components, match.reasons)
    tally.add(component, score - FRAMES_MARGIN - match.score, hint)
    match.score = total(match.components)


def literal_before_helpers(matches: list[Match]) -> list[Match]:
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
        put_below(match, ceiling, "rank.below-literal", hint)
    return matches


WHOLE = "\x00whole message"  # the key of the templates that match a whole message
# The key of the templates a cut message agrees with as far as it goes: what it shows is the
# same message to each, and how much of each template that is (its share, and the literal
# characters it covers: one template's `.` after the value where another has none) is the
# template's, not a clue of the paste.
CUT = "\x00cut message"
CUT_COMPONENT = "message.cut"
# The key of the templates a message is a near copy of (markdown or other words around or
# inside it), each with the same words changed: the same message to this paste, as a whole one.
NEAR = "\x00near message"
NEAR_COMPONENT = "message.near"
# points the paste itself did not earn
_NOT_CLUES = frozenset({GONE_COMPONENT, REVIEWED_COMPONENT, DRAFT_COMPONENT})


def same_message(matches: list[Match], candidates: dict[str, Candidate]) -> list[Match]:
    """Records of one exception (or one log line) that raise the same message with the same
    score: nothing tells them apart, so they are shown together under the first ("the same
    message is raised at ...") instead of one of them winning by chance. Their classes may differ (a
    class refined between releases) where the paste names none, or one neither raises: a
    pasted class one of them raises scores them apart.

    A message cut short (an issue's title) agrees with every template that goes on as it
    does: those records are one answer too, led by the one it shows most of. So are the
    templates a near copy of the message (`**ValueError: ...**` in markdown) fits with the
    same words changed.

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
        not_clues = _NOT_CLUES
        if match.components and match.components[0].id == CUT_COMPONENT:
            message, not_clues = CUT, _NOT_CLUES | {CUT_COMPONENT, SPECIFICITY_ID}
        elif match.components and match.components[0].id == NEAR_COMPONENT:
            message = NEAR  # its points, in the key's total, count the words changed
        key = (
            match.exception_index,
            match.log_line,  # a log line's records go together too (SGLang's NaN check)
            message,
            total([part for part in match.components if part.id not in not_clues]),
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
