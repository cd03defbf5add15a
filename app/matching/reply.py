"""The reply's shape: what a match shows of the exceptions and captures it found, capped.

A reply is capped: a paste of a hundred thousand exception lines answers with the first
`MAX_EXCEPTIONS` of them (those that the shown matches explain first) and `truncated: true`,
not with a reply ten times its size.
"""

from collections.abc import Sequence

from app.matching.libraries import raised_by
from app.matching.tracebacks.model import ParsedException
from app.wire.base import Extended
from app.wire.matching import ExceptionOut

MAX_EXCEPTIONS = 100  # exceptions in one reply
MAX_FRAMES = 100  # frames of one exception in a reply, the innermost
MAX_MESSAGE_CHARS = 4000  # of one exception's message in a reply (errorMessage's maxLength)
MAX_CAPTURE_CHARS = 256  # of one captured value in a reply


def exception_out(exception: ParsedException) -> tuple[ExceptionOut, bool]:
    """The exception as the reply shows it, and whether a cap shortened it."""
    frames = exception.frames[-MAX_FRAMES:]
    capped = Extended(
        exception,
        message=exception.message[:MAX_MESSAGE_CHARS],
        frames=frames,
        raised_by=raised_by(exception),
    )
    out = ExceptionOut.model_validate(capped)
    shortened = len(frames) < len(exception.frames) or len(out.message) < len(exception.message)
    return out, shortened


def shown_exceptions(
    exceptions: Sequence[ParsedException], explained: set[int]
) -> list[ParsedException]:
    """At most MAX_EXCEPTIONS, in paste order: those the shown matches explain, then the
    first of the rest."""
    if len(exceptions) <= MAX_EXCEPTIONS:
        return list(exceptions)
    shown = [e for e in exceptions if e.index in explained]
    shown += [e for e in exceptions if e.index not in explained][: MAX_EXCEPTIONS - len(shown)]
    return sorted(shown, key=lambda e: e.index)


def capped_captures(captures: dict[str, str | None]) -> tuple[dict[str, str | None], bool]:
    """The captures as the reply shows them, and whether a cap shortened any."""
    capped = {k: v[:MAX_CAPTURE_CHARS] if v else v for k, v in captures.items()}
    return capped, capped != captures
