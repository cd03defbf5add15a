"""Lines of a running program's output in, chunks of text that hold an error out.

`errkb run` feeds each line as it arrives and `errkb explain` each line of a log file; each
chunk goes to POST /api/match, whose parser (app.matching.logtext and .traceback) reads it
in full. Here those same two modules only look at one line at a time, cheaply, to tell
when an error starts and when it is complete:

- a traceback header, a frame, a chain separator ("The above exception was the direct
  cause..."), a thread's or process's traceback header, or a line logged at ERROR or above
  opens a chunk, with the few lines before it for context (which upstream, which process);
- the exception line (`RuntimeError: ...`, as the parser reads a bare line) completes it,
  unless a chained traceback follows: the chunk is sent once no new traceback has started
  for a few lines, or after a short quiet period;
- an open chunk with no exception line is sent after a quiet period, after a run of lines
  that are not part of it, or when it grows too long.

The same error repeated (a server logging it on every request) is sent once.
"""

import re
from collections import deque
from dataclasses import dataclass, field

from app.matching.logtext import clean_lines
from app.matching.tracebacks.parse import parse_exceptions

CONTEXT_LINES = 20
"""Lines before an error kept with it: the log prefixes name the upstream and the process."""

TAIL_LINES = 10
"""Lines after an exception line (or after the last line of an open error) that end it."""

MAX_CHUNK_LINES = 2000
"""Longest chunk: a traceback longer than this is sent in parts (the parser reads cut ones)."""

MAX_LINE_CHARS = 64 * 1024
"""Longest line looked at; a longer one (a progress bar never ending its line) is cut."""

QUIET_S = 0.5
"""Seconds without a new line after which an open or complete error is sent."""

MAX_SIGNATURES = 10_000
"""Distinct errors remembered, so that a repeated one is sent once."""

_OPENERS = (
    "Traceback (most recent call last):",
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
    "Exception Group Traceback (most recent call last):",
)
_FRAME = re.compile(r'\s*File "[^"]{1,4096}", line [0-9]{1,9}')
_LOG_HEADER = re.compile(r"Process [\w.\-]{1,128}:$|Exception in thread .{1,256}:$")
_ERROR_LEVEL = re.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b|\[E |^E[0-9]{4} ")
_NAME_START = re.compile(r"[^\W\d]")
# What any of the above, or an exception line as the parser reads a bare one, contains: a
# builtin's or a suffixed class name, a module-qualified CapWords name, an opener, a frame, an
# error level. A line (or a whole read) with none of it needs no closer look. Plain `in`
# tests and two regexes with a literal start: one alternation of them all is far slower
# (docs/benchmarks.md, "Costs behind the code's choices").
_WORDS = (
    "Error",
    "Exception",
    "Warning",
    "Exit",
    "Interrupt",
    "Iteration",
    "Traceback",
    'File "',
    "During handling",
    "Process ",
    "ERROR",
    "CRITICAL",
    "FATAL",
    "[E ",
)
_QUALIFIED = re.compile(r"\.[A-Z]")
_GLOG_ERROR = re.compile(r"E[0-9]{4} ")


def _candidate(text: str) -> bool:
    """Whether `text` may hold a line that opens, continues or completes an error."""
    return (
        any(word in text for word in _WORDS)
        or _QUALIFIED.search(text) is not None
        or _GLOG_ERROR.search(text) is not None
    )


@dataclass
class ErrorWatch:
    """The chunking state of one output stream (a program's stdout, its stderr, a log)."""

    quiet_s: float = QUIET_S
    _before: deque[str] = field(default_factory=lambda: deque(maxlen=CONTEXT_LINES))
    _chunk: list[str] = field(default_factory=list)
    _exception_lines: list[str] = field(default_factory=list)
    _complete: bool = False  # the exception line has arrived
    _since: int = 0  # lines since the exception line, or since the last line of the error
    _last_at: float = 0.0
    _signatures: set[tuple[str, ...]] = field(default_factory=set)

    def feed(self, line: str, now: float) -> list[str]:
        """Take one line (without its newline); the chunks this line completed."""
        line = line[:MAX_LINE_CHARS].removesuffix("\r")
        self._last_at = now
        opens = part = exception = False
        text = line
        if _candidate(line):  # most lines of a log are none of these: one quick look
            clean = clean_lines(line)[-1]  # a progress bar's carriage returns: its last state
            text = clean.text
            opens = text.startswith(_OPENERS) or bool(_LOG_HEADER.match(text))
            part = opens or bool(_FRAME.match(text)) or bool(_ERROR_LEVEL.search(clean.prefix))
            exception = _is_exception_line(text)
        ready: list[str] = []
        if not self._chunk:
            if not (part or exception):
                self._before.append(line)
                return ready
            self._chunk = [*self._before, line]
            self._before.clear()
        else:
            self._chunk.append(line)
        if exception:
            self._exception_lines.append(text.strip())
            self._complete, self._since = True, 0
        elif opens:
            self._complete, self._since = False, 0
        elif part and not self._complete:
            self._since = 0
        else:
            self._since += 1
        if self._since >= TAIL_LINES or len(self._chunk) >= MAX_CHUNK_LINES:
            ready += self.flush()
        return ready

    def feed_lines(self, lines: list[str], now: float) -> list[str]:
        """Take the lines of one read; with no error open and nothing of one in them, they
        are only kept as context, without a look at each."""
        if not self._chunk and not _candidate("\n".join(lines)):
            if lines:
                self._last_at = now
                self._before.extend(line[:MAX_LINE_CHARS] for line in lines[-CONTEXT_LINES:])
            return []
        return [chunk for line in lines for chunk in self.feed(line, now)]

    def due(self) -> float | None:
        """When the open chunk is sent if no line arrives before (time.monotonic())."""
        return self._last_at + self.quiet_s if self._chunk else None

    def flush(self) -> list[str]:
        """Send what is open now (at the end of the output, or after a quiet period)."""
        chunk, exception_lines = self._chunk, self._exception_lines
        self._chunk, self._exception_lines = [], []
        self._complete, self._since = False, 0
        if not chunk:
            return []
        signature = tuple(exception_lines) or tuple(clean_lines(line)[0].text for line in chunk)
        if signature in self._signatures:
            return []
        if len(self._signatures) < MAX_SIGNATURES:
            self._signatures.add(signature)
        return ["\n".join(chunk) + "\n"]


def _is_exception_line(text: str) -> bool:
    """`SomeError: message` at the start of a line, as the traceback parser reads a bare line
    (frames and source lines are indented, so they are never taken for one)."""
    if not _NAME_START.match(text):
        return False
    return bool(parse_exceptions(text))


def chunks_of(text: str) -> list[str]:
    """The error chunks of a whole log, as `errkb run` would have sent them."""
    watch = ErrorWatch()
    return watch.feed_lines(text.removesuffix("\n").split("\n"), 0.0) + watch.flush()
