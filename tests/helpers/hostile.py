"""Hypothesis strategies for hostile pastes: what strangers send to the matcher.

Newline, CR, NUL and ANSI floods, invalid UTF-8, lone surrogates, chained and nested
tracebacks, exception groups, log prefixes, and lines of a mebibyte, mixed at random.
"""

from hypothesis import strategies as st

MIB = 1 << 20

PIECES = [
    "\n",
    "\r",
    "\r\n",
    "\x00",
    "\x1b[31m",
    "\x1b[0m",
    "\x1b]8;;http://example.invalid\x07",
    "\x9b1m",
    "é",
    "日本",
    "\ud800",
    "\U0001f600",
    "Traceback (most recent call last):\n",
    '  File "/srv/app/x.py", line 12, in f\n',
    "    raise ValueError(msg)\n",
    "    ~~~~~^^^^^\n",
    "ValueError: ",
    "KeyError: 'a\\nb'",
    "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096",
    "\nThe above exception was the direct cause of the following exception:\n\n",
    "\nDuring handling of the above exception, another exception occurred:\n\n",
    "  + Exception Group Traceback (most recent call last):\n",
    "  | ",
    "  +-+---------------- 1 ----------------\n",
    "E       ",
    "[rank0]: ",
    "(EngineCore_DP0 pid=1234) ",
    "ERROR 08-14 12:00:01 [core.py:710] ",
    "  [Previous line repeated 996 more times]\n",
    "... ",
    "(",
    ")",
    ":",
    " ",
]

OVER_THE_LINE_LIMIT = ["\n" * (MIB - 1) + "x", "\r" * (MIB - 1) + "x"]
"""Refused before parsing (app.matching.service.MAX_PASTE_LINES): 8 s each to parse before."""

FLOODS = [
    "\n" * 99_999 + "x",
    "\r\n" * 99_999 + "x",
    "x" * MIB,  # one line of a mebibyte
    "ValueError: " + "a " * (MIB // 2 - 8),
    "\x1b[0m" * (MIB // 4),
    "\x00" * MIB,
    "ValueError: x\n" * (MIB // 14),
    "x\n" * 99_999,  # just within the line limit
    ("Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 3) * 5000,
    "é" * (MIB // 2),
]


def pastes(over_the_limits: bool = False) -> st.SearchStrategy[str]:
    """A hostile paste: a mix of the pieces and random text, or a mebibyte flood; with
    `over_the_limits`, also floods that the service refuses before parsing."""
    mixed = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=20)), max_size=60)
    floods = st.sampled_from(FLOODS + (OVER_THE_LINE_LIMIT if over_the_limits else []))
    return st.one_of(
        mixed.map("".join),
        floods,
        st.tuples(floods, mixed.map("".join)).map(lambda pair: pair[1] + pair[0]),
    )
