"""What other tools wrap around an exception's message: xinference's prefix, and HTTP error
bodies (as JSON, a Python repr, or JSON inside a string) whose message is the error's."""

import ast
import json
import re

# What other tools put in front of the message they pass on: xinference's
# "[address=127.0.0.1:1234, pid=56] ", at the start or after its own words.
_WRAPPER = re.compile(r"\[address=[\w.:\-\[\]]{1,64}, pid=[0-9]{1,10}\] ?")
# An HTTP error body: vLLM's and SGLang's `{"object":"error","message":...}`,
# OpenAI's `{'error': {'message': ...}}`, as JSON, a Python repr (how the openai client
# prints it) or JSON inside a string (`{\"message\":\"...\"}`); its message is the error.
_BODY_MESSAGE = re.compile(r"""(?P<key>\\?["'])message(?P=key) ?: ?(?P<quote>\\?["'])""")
_BODY_TYPE = re.compile(r"""\\?["']type\\?["'] ?: ?\\?["'](?P<type>[A-Za-z_]\w{0,127})""")
_BODY_ERROR_MARK = re.compile(r"""\\?["'](?:object\\?["'] ?: ?\\?["']error|error\\?["'] ?: ?\{)""")
# What may come before a body that says nothing of being an error: nothing, a quote, or the
# openai client's "Error code: 400 - ".
_BODY_LEAD = re.compile(r"""["']?(?:Error code: [0-9]{3} - )?""")
MAX_BODY_MESSAGE = 8192


def after_wrappers(text: str, start: int) -> int:
    """Where the message begins once the wrappers other tools put in front are taken off:
    xinference's ``[address=..., pid=...]``, at the start or after its own words (``Failed
    to launch model, detail: [address=...] <the engine's message>``)."""
    found = start
    if "[address=" in text:
        for match in _WRAPPER.finditer(text, start):
            found = match.end()
    return found


def error_body(text: str, start: int, marked: bool) -> tuple[str, int, int, str | None] | None:
    """(message, where its text begins and ends in ``text``, the body's ``type``) of an HTTP
    error body at or after ``start``; None when there is none. A body alone on a line
    (``marked``), or after other words, must say it is an error (``"object": "error"``,
    ``"error": {``), so that a log line or a message that shows a dict with a ``message``
    key (a chat message) is not taken for one."""
    brace = text.find("{", start)
    if brace < 0 or "message" not in text:
        return None
    marked = marked or _BODY_LEAD.fullmatch(text, start, brace) is None
    if marked and _BODY_ERROR_MARK.search(text, brace) is None:
        return None
    key = text.find("message", brace)
    while key >= 0:
        for back in (1, 2):
            found = _BODY_MESSAGE.match(text, key - back) if key - back >= brace else None
            if found is not None:
                begin = found.end()
                end = _string_end(text, begin, found["quote"])
                kind = _BODY_TYPE.search(text, brace)
                return unescape(text[begin:end], found["quote"]), begin, end, kind and kind["type"]
        key = text.find("message", key + 1)
    return None


def _string_end(text: str, begin: int, quote: str) -> int:
    """Where the quoted string starting at ``begin`` ends (its closing quote), or where the
    line or the longest message ends when a cut paste left it open."""
    limit = min(len(text), begin + MAX_BODY_MESSAGE)
    at = begin
    while at < limit:
        if text.startswith(quote, at) and (len(quote) == 1 or text[at - 1 : at] != "\\"):
            return at
        at += 2 if text[at] == "\\" and len(quote) == 1 else 1
    return limit


def unescape(raw: str, quote: str) -> str:
    """The text of a string literal as JSON (``"``, or ``\\"`` inside another string) or
    Python's repr (``'``) wrote it; as written when it does not decode."""
    try:
        if quote.endswith("'"):
            value = ast.literal_eval(f"'{raw}'")
        else:  # JSON has no \\' escape, yet servers write one for a quote in the message
            value = json.loads('"' + raw.replace("\\'", "'") + '"')
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw
    return value if isinstance(value, str) else raw
