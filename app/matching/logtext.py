"""Pasted text -> clean lines, each mapped back to offsets in the original paste.

People paste what their terminal or log collector showed them: colour codes, CRLF, timestamps,
log levels, and the tags that vLLM, torch.distributed and Ray put in front of every line of a
child process. The traceback parser must see the bare text Python printed, while the web page
must still highlight the right characters of what was pasted; so every clean line keeps a map
from its characters back to the original offsets, and a "stream" key naming the process it
came from, so that two processes whose lines interleave can be told apart.

Everything here is linear in the size of the paste: lines are found with str.find, and every
regex is anchored at a known position with bounded quantifiers, so none can backtrack
catastrophically.
"""

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from app.matching import deadline

MAX_PREFIXES = 8
"""Most prefixes stripped from one line; real logs stack three or four at most."""

_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]{0,64}[ -/]{0,16}[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]{0,4096}(?:\x07|\x1b\\)"  # OSC: titles, hyperlinks
    r"|\x1b[()][0-9A-Za-z]"  # character set selection
    r"|\x1b[@-Z\\-_]"  # any other two-byte escape
)
# A paste copied out of a web page's source or an HTML log viewer (xinference's, a CI's)
# keeps the page's escapes: `File &quot;/x/llm_engine.py&quot;, line 577`. The few that
# stand for what Python prints are read as their characters; a message's own text never
# holds them, so nothing else changes.
_ENTITIES = {"&quot;": '"', "&#34;": '"', "&#39;": "'", "&#x27;": "'", "&apos;": "'"}
_ENTITIES |= {"&lt;": "<", "&gt;": ">", "&amp;": "&"}
_ENTITY = re.compile("|".join(_ENTITIES))

_LEVEL = r"(?:DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE)"
_FILE_LINE = r"[\w./\\<>\-]{1,256}:[0-9]{1,7}"  # Windows' paths too: "torch\_dynamo\x.py:9"
_SOURCE_LOCATION = rf"\[{_FILE_LINE}\]"
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]{1,9})?"
_ZONE = r"(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
_DATE_TIME = rf"[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}[T ]{_TIME}{_ZONE}"
_EMPHASIS = r"(?:\*{1,3}_?|_\*{1,3})"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"

# An issue title's tags from the projects' issue templates, before the error it names:
# SGLang's "[Bug] ", vLLM's "[Bug]: ", "[Usage]: ", "[Bug][V1]: ". A closed list: a bracketed
# word is otherwise a log's own tag ("[sgl_kernel] CRITICAL: ..."). Not a logger's prefix:
# the line after them is the error itself (app.matching.tracebacks).
# The level a log prefix names, at WARNING or above: what a log site's record names as its
# class (`WARN` and `FATAL` are logging's other spellings of WARNING and CRITICAL).
_LOGGED_LEVEL = re.compile(r"\b(WARNING|WARN|ERROR|CRITICAL|FATAL)\b")
_LEVEL_SPELLINGS = {"WARN": "WARNING", "FATAL": "CRITICAL"}
ISSUE_TITLE_TAGS = re.compile(
    r"(?:\[(?i:bug|usage|installation|performance|feature|misc|question|new model|doc"
    r"|rfc|hardware|v[0-9])\] ?){1,3}:? ?"
)

# Every pattern consumes at least one character; a named group "tag" marks a stream, and
# no pattern has another capturing group (see _ANY_PREFIX).
_PREFIXES = (
    # vLLM's and Ray's child-process tags: "(EngineCore_DP0 pid=1234) ",
    # "(RayWorkerWrapper pid=5678, ip=10.0.0.1) ", "(VllmWorker rank=0 pid=9) ", "(pid=5678) ".
    re.compile(
        r"\((?P<tag>(?:[A-Za-z_][\w.=\-]{0,63} ){0,3}pid=[0-9]{1,10}"
        r"(?:, ip=[0-9A-Fa-f.:]{1,45})?)\) ?"
    ),
    # torch.distributed / torchrun: "[rank0]: ", "[rank12]:", "[default0]:".
    re.compile(r"\[(?P<tag>(?:rank|default)[0-9]{1,6})\]: ?"),
    # vLLM: "INFO 08-14 12:00:01 [core.py:710] ", and before 0.7 without the bracket:
    # "ERROR 12-05 20:24:46 engine.py:366] ".
    re.compile(
        rf"{_LEVEL} [0-9]{{2}}-[0-9]{{2}} {_TIME}(?: (?:{_SOURCE_LOCATION}|{_FILE_LINE}\]))? ?"
    ),
    # journald: "Aug 19 18:34:30 host vllm[8707]: ", or with --output=short-iso;
    # the process and its pid name the stream.
    re.compile(
        rf"(?:{_MONTH} [ 0-9][0-9] {_TIME}|{_DATE_TIME}) [\w.\-]{{1,64}} "
        r"(?P<tag>[\w.\-/@]{1,64}\[[0-9]{1,10}\]): ?"
    ),
    # docker compose: "vllm-1  | ", "project_sglang_1 | ", or a service's own container_name,
    # padded as compose pads it ("gemma-vllm-server  | ", "sglang  | "); the container is a
    # stream. A name is a compose name by a dash or underscore in it, or by the padding of at
    # least two spaces (a message's "value | x" is not one), and never a level ("ERROR | ").
    re.compile(
        rf"(?!{_LEVEL} )(?P<tag>[A-Za-z0-9]"
        r"(?:[\w.]{0,63}[-_][\w.\-]{0,63}|[\w.]{0,63}(?=  ))) {1,32}\| ?"
    ),
    # A tool relaying a child process's streams: "[training STDERR] ", "[worker stdout] ".
    re.compile(r"\[(?P<tag>[\w.\-]{1,32} (?:STDERR|STDOUT|stderr|stdout))\] ?"),
    # A quoted reply in an issue thread or a mail: "> ", "> > ".
    re.compile(r">(?: ?>){0,7} ?"),
    # Markdown around a pasted log: a fence ("```", "```python", alone on its line, or opening
    # a line of text), or a backtick opening an inline code span whose first word is not
    # itself quoted ("`ValueError: ...`", not "`max_model_len` must be ...").
    re.compile(r"`{3,8}(?:[\w+#.\-]{1,32}[ \t]{0,64}$)?|`(?=[^`\s]{1,256}(?:\s|$))"),
    # Markdown emphasis around a whole line ("**_ValueError: ..._**", "**ValueError: ...**"):
    # bold or italic with an asterisk, opened at the line's start and closed at its end.
    re.compile(rf"{_EMPHASIS}(?=[^\s*_].{{0,8192}}[^\s*_]{_EMPHASIS}[ \t]{{0,64}}$)"),
    # rich's boxed traceback: the left border of each row inside the box ("│ ").
    re.compile(r"│ ?"),
    # xinference's log lines: "2025-04-15 10:15:22,015 xinference.api.restful_api 48577 ERROR
    # [address=10.8.9.17:34697, pid=141952] ".
    re.compile(
        rf"{_DATE_TIME} [\w.\-]{{1,128}} [0-9]{{1,10}} {_LEVEL} {{1,8}}"
        r"(?:\[address=[\w.:\-\[\]]{1,64}, pid=[0-9]{1,10}\] ?)?"
    ),
    # glog and c10: "E1114 12:00:01.123456 1234 file.cc:12] ", "[W reducer.cpp:1300] ";
    # torch's own logs in that shape, with "V" for DEBUG: "V0812 15:05:52.194000 18 x.py:556] ".
    re.compile(rf"\[?[IWEFV](?:[0-9]{{3,4}} {_TIME}(?: {{1,8}}[0-9]{{1,10}})?)? {_FILE_LINE}\] ?"),
    # torch.compile's logs, after that: the frame and compile of the log line ("[0/8] ",
    # "[4/0_1] ", compiled autograd's "[!0/0/0] ") and the artifact it is ("[__graph_breaks] ",
    # "[__recompiles] ").
    re.compile(r"\[!?[0-9]{1,6}(?:/[0-9]{1,6}){1,2}(?:_[0-9]{1,4})?\] ?|\[__[a-z_]{1,64}\] ?"),
    ISSUE_TITLE_TAGS,
    # "[2026-08-14T12:00:01.123Z] ", SGLang's "[2026-08-14 12:00:01 TP0] ", "[12:00:01] ".
    re.compile(rf"\[(?:{_DATE_TIME}|{_TIME})(?: \w{{1,16}}){{0,4}}\] ?"),
    # "2026-08-14 12:00:01,123 ", "2026-08-14 12:00:01,123 - ", container runtimes' " stdout F ".
    re.compile(rf"{_DATE_TIME}(?: (?:stdout|stderr) [FP])?(?: [-|])? ?"),
    # Levels: "ERROR ", "ERROR - ", "ERROR: ", "ERROR:    " (uvicorn), "ERROR:root:" (logging's
    # default), "[ERROR] ", optionally followed by a source location.
    re.compile(
        rf"(?:\[{_LEVEL}\] ?|{_LEVEL}(?::[\w.\-]{{1,128}}:|: {{0,8}}| (?:[-|] )?)"
        rf"(?:{_SOURCE_LOCATION} ?)?)"
    ),
)


# Ray's log deduplication, at the end of a line it printed once for several processes.
_RAY_REPEATED = re.compile(
    r" \[repeated [0-9]{1,9}x across cluster\](?: \(Ray deduplicates logs by default\..{0,1024}\))?"
)

# What ends a line that `_closed_at` cuts: a code span or fence, Ray's repeat note, emphasis.
_CLOSERS = ("`", "]", ")", "*", "_")
_EMPHASIS_MARKS = "*_"

_NO_PREFIX_BEGINS = ("", " ", "\t")
"""What no prefix begins with: a line that begins so has none, and is spared the search."""

# All of them in one alternation, tried in order as Python tries the branches: the first
# that matches at the position wins, as if each were tried alone; one attempt per prefix,
# not one per shape. A branch holds no capturing group but its stream tag ("tag<i>"), so a
# match's last group names the tag of the shape that matched, if it has one. No group
# wraps a branch: the engine then skips each branch whose first character does not fit.
_ANY_PREFIX = re.compile(
    "|".join(
        f"(?:{p.pattern.replace('(?P<tag>', f'(?P<tag{i}>')})" for i, p in enumerate(_PREFIXES)
    )
)


@dataclass(slots=True)
class CleanLine:
    """One line of the paste with its noise removed, still tied to the original text.

    ``pieces`` lists where each contiguous run of ``text`` begins: pairs of (index in text,
    offset in the original). There is one piece unless colour codes sat inside the line, so
    highlighting a part of the text stays exact even then.

    Not frozen, though never changed: one is made per line, and a frozen dataclass costs
    more to make (docs/benchmarks.md, "Costs behind the code's choices").
    """

    text: str
    start: int
    end: int
    stream: str
    prefix: str
    line_no: int
    pieces: tuple[tuple[int, int], ...]

    def offset(self, index: int) -> int:
        """Original offset of ``text[index]``; ``len(text)`` maps to ``end``."""
        if index >= len(self.text):
            return self.end
        if len(self.pieces) == 1:
            return self.start + index
        return _offset_in(self.pieces, index)

    def span(self, begin: int, stop: int) -> tuple[int, int]:
        """Original (start, end) of ``text[begin:stop]``, ending right after its last character.

        Ending after the last character rather than at ``offset(stop)`` keeps a colour code
        that follows the span out of it.
        """
        if stop <= begin:
            where = self.offset(begin)
            return where, where
        return self.offset(begin), self.offset(stop - 1) + 1


def continues_at_margin(line: CleanLine, after: CleanLine) -> bool:
    """Whether ``after`` may carry on ``line`` as a terminal wrapped it: the line has a log
    prefix, and the next has none and begins at the margin (a frame's or a source line is
    indented)."""
    return bool(line.prefix) and not after.prefix and after.text[:1] not in ("", " ", "\t")


def clean_lines(text: str) -> list[CleanLine]:
    """Split a paste into clean lines, one per line of the original.

    LF and CRLF end a line; so does a lone CR, because progress bars rewrite a line with it
    and each version is a line of its own in the paste. Stops at the match deadline.
    """
    if "\r" not in text:  # most pastes: lines are what splitting at LF gives
        lines: list[CleanLine] = []
        start = 0
        for number, raw in enumerate(text.split("\n")):
            if number % deadline.CHECK_EVERY == 0:
                deadline.check()
            lines.append(_clean_line(raw, start, number))
            start += len(raw) + 1
        return lines
    lines = []
    position = 0
    while True:
        if len(lines) % deadline.CHECK_EVERY == 0:
            deadline.check()
        newline = text.find("\n", position)
        stop = len(text) if newline < 0 else newline
        begin = position
        while (carriage := text.find("\r", begin, stop)) >= 0:
            lines.append(_clean_line(text[begin:carriage], begin, len(lines)))
            begin = carriage + 1
            if len(lines) % deadline.CHECK_EVERY == 0:
                deadline.check()
        if begin < stop or begin == position or newline < 0:
            lines.append(_clean_line(text[begin:stop], begin, len(lines)))
        if newline < 0:
            return lines
        position = newline + 1


def _clean_line(raw: str, start: int, line_no: int) -> CleanLine:
    """Remove colour codes, then the known prefixes at the start of the line (``raw``, which
    begins at ``start`` in the paste) and what closes them at its end (a code span's
    backtick, a fence, the right border of a rich box)."""
    if "\x1b" not in raw and "\x9b" not in raw and "&" not in raw:  # most lines: one run
        cut, stream = _strip_prefixes(raw)
        stop = _closed_at(raw, cut) if _may_close(raw) else len(raw)
        first = start + cut
        end = start + stop if cut < stop else first
        return CleanLine(raw[cut:stop], first, end, stream, raw[:cut], line_no, ((0, first),))
    clean, pieces = _decoded(raw, start)
    cut, stream = _strip_prefixes(clean)
    stop = _closed_at(clean, cut)
    kept = [(index - cut, original) for index, original in pieces if cut < index < stop]
    first = _offset_in(pieces, cut)
    return CleanLine(
        text=clean[cut:stop],
        start=first,
        end=_offset_in(pieces, stop - 1) + 1 if cut < stop else first,
        stream=stream,
        prefix=clean[:cut],
        line_no=line_no,
        pieces=((0, first), *kept),
    )


def _may_close(clean: str) -> bool:
    """Whether `_closed_at` may find anything to remove: each thing it removes ends the line
    with one of these characters, or follows a rich box's border. Most lines of a log have
    none, and are spared the call."""
    return clean.endswith(_CLOSERS) or "│" in clean


def _closed_at(clean: str, cut: int) -> int:
    """Where the line's text ends once what closes it is removed: Ray's note that it dropped
    copies of the line (" [repeated 6x across cluster]"), the emphasis that opened it, a
    fence ("```") closing the line, a backtick left unpaired (the end of a code span opened
    on this line or an earlier one), or the right border of a rich box whose left border
    was a prefix.

    Paired backticks stay: "`x` must be positive" is part of a message."""
    stop = len(clean)
    repeated = clean.rfind(" [repeated ", cut)
    if repeated >= 0 and _RAY_REPEATED.fullmatch(clean, repeated):
        stop = repeated
    if clean.find("│", 0, cut) >= 0:
        body = clean[cut:stop].rstrip()
        if body.endswith("│"):
            stop = cut + len(body[:-1].rstrip())
    opened = len(clean[:cut]) - len(clean[:cut].rstrip(_EMPHASIS_MARKS))
    if opened and clean.endswith(clean[cut - opened : cut][::-1], cut, stop):
        stop -= opened  # the emphasis a prefix opened, closed at the end
    if clean.endswith("`", cut, stop):
        body = clean[cut:stop].rstrip("`")
        ticks = stop - cut - len(body)
        if ticks >= 3 or (ticks == 1 and body.count("`") % 2 == 0):
            stop = cut + len(body.rstrip())
    return max(stop, cut)


def _decoded(raw: str, start: int) -> tuple[str, list[tuple[int, int]]]:
    """Remove escape sequences and read HTML escapes as their characters; pieces map each
    kept run back to its original offset (a decoded character, to its escape's start)."""
    parts: list[str] = []
    pieces: list[tuple[int, int]] = []
    size = 0
    kept_from = 0
    found = list(_ANSI.finditer(raw))
    if "&" in raw:
        found = sorted([*found, *_ENTITY.finditer(raw)], key=_match_start)
    for match in found:
        if match.start() < kept_from:
            continue  # inside an escape sequence already removed
        if match.start() > kept_from:
            pieces.append((size, start + kept_from))
            parts.append(raw[kept_from : match.start()])
            size += match.start() - kept_from
        if match.re is _ENTITY:
            pieces.append((size, start + match.start()))
            parts.append(_ENTITIES[match[0]])
            size += 1
        kept_from = match.end()
    if kept_from < len(raw):
        pieces.append((size, start + kept_from))
        parts.append(raw[kept_from:])
    return "".join(parts), pieces or [(0, start + len(raw))]


def _match_start(match: re.Match[str]) -> int:
    """Sort key of an escape found in a line: where it begins."""
    return match.start()


def _offset_in(pieces: Sequence[tuple[int, int]], index: int) -> int:
    """Original offset of clean character ``index``, found in the run that holds it."""
    clean_index, original = pieces[bisect_right(pieces, index, key=_run_start) - 1]
    return original + index - clean_index


def _run_start(piece: tuple[int, int]) -> int:
    """Sort key of a piece: where its run begins in the clean text."""
    return piece[0]


def _strip_prefixes(clean: str) -> tuple[int, str]:
    """Length of the known prefixes at the start of ``clean``, and the stream tags among them
    (joined by spaces: the line's stream).

    Only the shapes listed above are removed, and only at the very start of the line (or right
    after another prefix), so a message that itself starts with a bracket keeps it.
    """
    if clean[:1] in _NO_PREFIX_BEGINS:  # most lines of a traceback: indented frames, code
        return 0, ""
    cut = 0
    streams: list[str] = []
    for _ in range(MAX_PREFIXES):
        match = _ANY_PREFIX.match(clean, cut)
        if match is None:  # at once on most lines of a traceback
            break
        if match.lastgroup is not None:  # a shape that names the line's stream
            streams.append(match[match.lastgroup])
        cut = match.end()
    return cut, " ".join(streams)


def line_level(prefix: str) -> str | None:
    """The level at WARNING or above that a line's log prefix names (`WARNING 03-05 10:12:01
    [config.py:123] ` -> WARNING), as logging spells it; None where it names none (SGLang's
    `[2025-01-01 10:00:00 TP0] ` shows no level)."""
    found = _LOGGED_LEVEL.search(prefix) if prefix else None
    return None if found is None else _LEVEL_SPELLINGS.get(found[1], found[1])
