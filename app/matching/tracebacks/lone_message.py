"""A paste that shows no exception but a message alone: read as an exception whose class is
unknown, so that its message is still matched as a message."""

import re
from collections.abc import Sequence

from app.matching.logtext import ISSUE_TITLE_TAGS, CleanLine
from app.matching.tracebacks.exception_line import VALIDATION_TAIL, VALIDATOR_MESSAGE
from app.matching.tracebacks.model import Draft
from app.matching.tracebacks.rows import HEADER
from app.matching.tracebacks.wrappers import after_wrappers

# The levels at which a log line alone is an error's message (vLLM's `ERROR 11-27 08:40:23
# engine.py:366] Model architectures [...] are not supported`), not a line of log.
_ERROR_LEVEL = re.compile(r"\b(?:ERROR|CRITICAL|FATAL)\b")
MIN_MESSAGE_ALNUM = 4  # a line alone with fewer letters, or fewer words, is no message
MIN_MESSAGE_WORDS = 2


def message_alone(lines: Sequence[CleanLine]) -> list[Draft]:
    """A paste that is one line of message and nothing else (``max_num_scheduled_tokens is
    set to -1792, ...``), or a bare log whose last line is one (the log a server printed up
    to its error, ``The model's max seq len (29000) is larger than ...``, with no logger's
    prefix): an exception whose class is unknown (""), so that its message is still matched
    as a message. Any other paste without an exception is a log."""
    filled = [line for line in lines if line.text.strip()]
    if not filled or (len(filled) > 1 and any(line.prefix for line in filled)):
        return []
    line = filled[-1]
    text = line.text.rstrip()
    begin = after_wrappers(text, len(text) - len(text.lstrip()))
    logger = ISSUE_TITLE_TAGS.sub("", line.prefix)
    logged = bool(logger.strip().strip("`")) and not text.startswith(
        tuple(VALIDATOR_MESSAGE), begin
    )
    if logged and not _ERROR_LEVEL.search(logger):
        return []  # an INFO or WARNING line is a log line: its message is matched inside it
    words = text[begin:].split()
    if len(words) < MIN_MESSAGE_WORDS or sum(char.isalpha() for char in text) < MIN_MESSAGE_ALNUM:
        return []
    if text.endswith(HEADER) or text.lstrip().startswith('File "'):
        return []
    name, end = "", len(text)
    opener = next((key for key in VALIDATOR_MESSAGE if text.startswith(key, begin)), None)
    if opener is not None:  # pydantic's line for one error: its class is the validator's
        name, begin = VALIDATOR_MESSAGE[opener], begin + len(opener)
        tail = VALIDATION_TAIL.search(text, begin)
        end = tail.start() if tail else end
    span = line.span(begin, end)
    return [Draft(name, text[begin:end], span, span, (span,))]
