"""How people really paste a traceback: each transform turns a real traceback into
the shape met in issue threads, so matching can be scored on every shape."""

from collections.abc import Callable

WRAP_WIDTH = 80
CUT_SHARE = 2 / 3  # of the last message that a cut paste still shows
MIN_CUT_CHARS = 24  # a message shorter than this is kept whole: less identifies nothing
HEADER = "Traceback (most recent call last):"


def prefixed(prefix: str) -> Callable[[str], str]:
    """Every line behind a log prefix."""
    return lambda text: "".join(prefix + line for line in text.splitlines(keepends=True))


def headerless(text: str) -> str:
    """Copied from the middle of a log: no header, and the outermost frame left out."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != HEADER:
        return text
    frames = [n for n, line in enumerate(lines) if line.lstrip().startswith('File "')]
    start = frames[1] if len(frames) > 1 else 1
    return "".join(lines[start:])


def quoted(text: str) -> str:
    """A reply that quotes the traceback ("> "), as mail and issue threads do."""
    return "".join(
        "> " + line if line.strip() else ">\n" for line in text.splitlines(keepends=True)
    )


def cut(text: str) -> str:
    """The paste ends inside the last exception's message: two thirds of it are left."""
    body = text.rstrip("\n")
    last = body.rfind("\n") + 1
    head, colon, message = body[last:].partition(": ")
    if not colon or len(message) < MIN_CUT_CHARS:
        return body
    keep = max(MIN_CUT_CHARS, int(len(message) * CUT_SHARE))
    return body[:last] + head + colon + message[:keep]


def wrapped(text: str) -> str:
    """A terminal's copy: every line broken at its width, words or not."""
    out = []
    for line in text.splitlines():
        while len(line) > WRAP_WIDTH:
            out.append(line[:WRAP_WIDTH])
            line = line[WRAP_WIDTH:]
        out.append(line)
    return "\n".join(out) + "\n"


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "as printed": lambda text: text,
    "headerless": headerless,
    "old vLLM log": prefixed("ERROR 12-05 20:24:46 engine.py:366] "),
    "docker compose": prefixed("vllm-1  | "),
    "journald": prefixed("Aug 19 18:34:30 gpu-host vllm[8707]: "),
    "quoted": quoted,
    "cut": cut,
    "wrapped": wrapped,
}
