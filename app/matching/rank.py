"""Confirmed pattern hits + parsed exceptions -> scored matches, with reasons and captures.

Each hit, partial message, raise site and statement of the paste is scored by its
components (app.matching.score), the best match of each record kept, and the lot put in the
order they are shown in (app.matching.rank_order).
"""

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app import upstreams
from app.exception_classes import BUILTIN_GRAPH, ClassGraph
from app.matching import native
from app.matching.candidate import Candidate, Paste
from app.matching.index import Captures, PatternIndex
from app.matching.libraries import WRONG_CALL
from app.matching.line_hit import LineHit
from app.matching.partial import Partial
from app.matching.rank_order import (
    KERNEL_CHECK,
    best_first,
    callers_below_likely,
    causes_first,
    checks_with_their_report,
    copies_below_likely,
    exceptions_first,
    frames_first,
    libraries_own_words,
    literal_before_helpers,
    named_projects,
    named_projects_only,
    put_below,
    same_message,
    wrappers_below_likely,
)
from app.matching.score import (
    Component,
    Match,
    MatchMemo,
    Tally,
    context_score,
    generic_component,
    log_line_score,
    message_score,
    partial_component,
    said,
    specificity_component,
    too_generic,
    total,
)
from app.matching.score_weights import (
    DRAFT_COMPONENT,
    FULL_LINE,
    FULL_MESSAGE,
    GENERIC_BELOW,
    GONE_COMPONENT,
    GONE_PENALTY,
    IN_TRACEBACK_NOISE,
    KERNEL_ASSERTION,
    LIKELY,
    NEEDS_FRAMES_BELOW,
    OUTSIDE_MESSAGE,
    RAISED_HERE_DYNAMIC,
    RAISED_HERE_OTHER_MESSAGE,
    REVIEWED_BONUS,
    REVIEWED_COMPONENT,
)
from app.matching.tracebacks.model import ParsedException

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)[^{}]*\}")


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


_TRACEBACK_HEADER = re.compile(r"\s*Traceback \(most recent call last\):?\s*")


def _announces_traceback(found: Captures) -> bool:
    """Whether a log line's only values are the header of a traceback it prints below
    (SGLang's `Scheduler hit an exception: Traceback (most recent call last):`): it says
    that something failed, not what, so it is no log line's answer; the exception below is,
    and where the paste cut it, another line's record may be."""
    values = [value for value in (*found.groups, *found.named.values()) if value]
    return bool(values) and all(_TRACEBACK_HEADER.fullmatch(value) for value in values)


def _better(match: Match, other: Match) -> bool:
    """Higher score; on a tie, the later exception (what finally failed) explains more."""
    if match.score != other.score:
        return match.score > other.score
    return (match.exception_index or -1) > (other.exception_index or -1)


def _finish(
    candidate: Candidate,
    tally: Tally,
    exception_index: int | None,
    captures: dict[str, str | None],
) -> Match:
    """The match, with the points every match gets: reviewed, or gone in a newer release."""
    if candidate.reviewed:
        hint = "reviewed record: explained by a curator, ranked above drafts"
        tally.add(REVIEWED_COMPONENT, REVIEWED_BONUS, hint)
    else:
        tally.add(DRAFT_COMPONENT, 0, "draft record: not yet reviewed")
    if candidate.gone:
        tally.add(GONE_COMPONENT, GONE_PENALTY, "raise site gone in a newer release")
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


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a paste shows of the records that may explain it, gathered by the caller
    (app.matching.service.find_matches) and ranked in one call.

    `hits` are the patterns found on its lines (a hit outside any exception came from a log
    line). `raised_at` are (record id, exception index) of records whose raise site is the
    exception's innermost frame: found by where they raise, whatever the message says.
    `partials` are (record id, exception index, agreement) of templates that a message with
    no full match is a wrapped, cut or near copy of (app.matching.partial). `statements` are
    (record id, exception index) of the records of the statement at an exception's innermost
    frame where the interpreter raised it (app.matching.statements): kept unless a record of
    the frames' files explains the message. `kernel_checks` are (record id, line) of the
    records made of the failed checks torch's kernels printed (app.matching.kernel_assertions):
    kept unless a record of the store holds the check. `raised_from` maps an exception to
    the C++ file, not torch's, its `Exception raised from ... at FILE:LINE` line names
    (app.matching.native.raised_from_elsewhere). `graph` holds the exception classes of the
    harvested releases, to tell related classes (app.exception_classes; None: the builtin
    ones); `log_repos` the repositories the paste's log format names, `log_versions` the
    release of a repository it names (app.matching.origin), `log_levels` the level each log
    line's prefix names (clean text -> WARNING, ERROR, CRITICAL; app.matching.logtext).
    """

    exceptions: Sequence[ParsedException]
    hits: Sequence[LineHit]
    raised_at: Sequence[tuple[str, int]]
    partials: Sequence[tuple[str, int, Partial]]
    statements: Sequence[tuple[str, int]]
    graph: ClassGraph | None
    log_repos: frozenset[str]
    log_versions: Mapping[str, str]
    log_levels: Mapping[str, str]
    kernel_checks: Sequence[tuple[str, str]] = ()
    raised_from: Mapping[int, str] = field(default_factory=dict)


def rank(index: PatternIndex, candidates: dict[str, Candidate], evidence: Evidence) -> list[Match]:
    """Scored matches of the `candidates` (by record id) that the `evidence` names, best
    first, one per record.

    Then: for an exception with frames, a record that explains its message from a
    file some frame is in ranks above every record from elsewhere; and records that raise
    the same message with the same score go together under the first one.
    """
    exceptions = evidence.exceptions
    paste = Paste(
        exceptions, evidence.graph or BUILTIN_GRAPH, evidence.log_repos, evidence.log_versions
    )
    asserted = native.device_side_assert(exceptions)
    best: dict[str, Match] = {}
    matches = MatchMemo(index)

    def keep(match: Match) -> None:
        if match.id not in best or _better(match, best[match.id]):
            best[match.id] = match

    for record_id, exception_index, line, on_message in evidence.hits:
        candidate = candidates.get(record_id)
        if candidate is None or native.is_tail_line(line.strip()):
            continue  # the CUDA errors' common tail names none of them
        specificity = index.specificity(record_id)
        if exception_index is None and asserted is not None and native.is_kernel_assertion(line):
            exception_index, on_message = asserted, True
            found = matches(record_id, line)
            explains = found is not None
            hint = "pattern matches the kernel assertion printed before the device-side assert"
            tally = said(Component(KERNEL_CHECK, FULL_MESSAGE + KERNEL_ASSERTION, hint))
            tally.extend(context_score(candidate, exceptions[asserted], paste))
        elif exception_index is not None and on_message:
            exception = exceptions[exception_index]
            in_frames = paste.frames_agree(candidate, exception)
            if specificity < NEEDS_FRAMES_BELOW and not in_frames:
                continue  # `{x} tensor` alone says too little to name a site
            message, found = message_score(matches, candidate, exception, line)
            explains = message.points >= FULL_LINE
            tally = said(message)
            if too_generic(specificity, exception) and not in_frames:
                tally.count(generic_component(specificity))
            tally.extend(context_score(candidate, exception, paste))
        elif (
            exception_index is None
            and candidate.logged
            and not exceptions  # beside a traceback, a logged line is context (as below)
            and specificity >= NEEDS_FRAMES_BELOW
            and (found := matches(record_id, line.strip(), full=True))
            and not _announces_traceback(found)
        ):
            explains = True  # a log site's message is the whole line: its captures are real
            tally = log_line_score(candidate, line.strip(), paste, evidence.log_levels)
            if specificity < GENERIC_BELOW:
                tally.count(generic_component(specificity))
        else:
            found = None  # captures come from a message, never from a log or frame line
            explains = False
            tally = Tally()
            if exception_index is None:
                tally.add("message.in-log-line", OUTSIDE_MESSAGE, "pattern found in a log line")
            else:
                hint = "pattern found in a traceback frame line"
                tally.add("message.in-frame-line", IN_TRACEBACK_NOISE, hint)
        tally.count(specificity_component(specificity), said=False)
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
    for record_id, exception_index, partial in evidence.partials:
        candidate = candidates.get(record_id)
        if candidate is None:
            continue
        exception = exceptions[exception_index]
        in_frames = paste.frames_agree(candidate, exception)
        if partial.covered < NEEDS_FRAMES_BELOW and not in_frames:
            continue
        tally = said(partial_component(partial))
        if too_generic(partial.covered, exception) and not in_frames:
            tally.count(generic_component(partial.covered))
        tally.extend(context_score(candidate, exception, paste))
        tally.count(specificity_component(partial.covered), said=False)
        match = _finish(candidate, tally, exception_index, dict(partial.captures))
        match.message_points = tally.components[0].points
        match.literal = partial.covered
        match.in_frames = in_frames
        keep(match)
    for record_id, exception_index in evidence.raised_at:
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
        tally = said(site)
        tally.extend(context_score(candidate, exception, paste))
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
    for record_id, exception_index in evidence.statements:
        candidate = candidates.get(record_id)
        if candidate is None or exception_index in explained:
            continue
        exception = exceptions[exception_index]
        tally = said(
            Component(
                "site.statement",
                RAISED_HERE_DYNAMIC,
                "raised by the interpreter at the statement of the innermost frame, "
                "where no raise is",
            )
        )
        tally.extend(context_score(candidate, exception, paste))
        match = _finish(candidate, tally, exception_index, {})
        if WRONG_CALL.search(exception.message) and match.score >= LIKELY:
            hint = (
                "a wrong call: the interpreter raised it at the caller's statement, but the "
                "callee's signature (another package's release, often) decides it: a "
                "possibility only"
            )
            put_below(match, LIKELY, "site.wrong-call", hint)
        match.message_points = RAISED_HERE_DYNAMIC
        match.literal = len(candidate.error_message)  # its pattern is the message, literal
        match.in_frames = True
        keep(match)
    for record_id, line in evidence.kernel_checks:
        candidate = candidates.get(record_id)
        on_line = {hit.record_id for hit in evidence.hits if hit.line.strip() == line}
        if candidate is None or any(
            matches(other, candidate.error_message, full=True) for other in on_line
        ):
            continue  # a record of the store holds the check: its own site answers
        hint = "the kernel's own line names the check that failed, its file and line"
        tally = said(Component(KERNEL_CHECK, FULL_MESSAGE + KERNEL_ASSERTION, hint))
        if asserted is None:
            tally.add("class.unknown", 0, "no exception of the paste reports the assertion")
        else:
            tally.extend(context_score(candidate, exceptions[asserted], paste))
        specificity = len(candidate.error_message)  # made of the line: all of it literal
        tally.count(specificity_component(specificity), said=False)
        match = _finish(candidate, tally, asserted, {})
        match.message_points = FULL_MESSAGE + KERNEL_ASSERTION
        match.literal = specificity
        match.log_line = line if asserted is None else None
        match.in_frames = True  # the kernel's line is where it failed, as a frame would say
        keep(match)
    named = named_projects(paste, exceptions)
    named_projects_only(list(best.values()), candidates, named)
    libraries_own_words(list(best.values()), exceptions)
    wrappers_below_likely(list(best.values()), candidates)
    copies_below_likely(list(best.values()), candidates, evidence.raised_from)
    callers_below_likely(list(best.values()), candidates, exceptions)
    ranked = literal_before_helpers(frames_first(list(best.values())))
    ranked = exceptions_first(
        ranked,
        lambda key, text, whole: matches(key, text, whole) is not None,
        lambda key: bool(named) and candidates[key].repo not in named | {upstreams.TORCH},
    )
    ranked = causes_first(ranked, exceptions)
    ranked = same_message(sorted(ranked, key=best_first), candidates)
    return checks_with_their_report(ranked, candidates)
