"""Clean lines -> the exceptions in a paste: frames, messages and how they chain.

A paste may hold any number of tracebacks, chained ones ("The above exception was the direct
cause ...", "During handling of the above exception ..."), tracebacks whose middle was cut,
frames without their ``Traceback (most recent call last):`` header (people paste from the middle
of a log), or only a bare ``SomeError: message`` line. Each exception found becomes a
ParsedException whose spans point into the original paste, so a page can highlight exactly what
matched.

Lines are parsed per stream (the process a log line came from, see logtext), so tracebacks of
two processes whose lines interleave are both recovered intact. Every line is looked at a
constant number of times and every regex is anchored and bounded, so parsing is linear time;
nothing here raises on any input, except DeadlineExceeded once the match deadline passed.

Each way a paste may show an exception is a dialect with a module of its own (Python's
traceback, IPython's, rich's box, an exception line alone, a warnings line, a mention in prose,
an HTTP error body alone, a message alone), all read through one interface (`stream.Dialect`);
`model` holds the types they share, `stream` tries the dialects in order and chains what they
find, and `parse.parse_exceptions` is the entry point.
"""
