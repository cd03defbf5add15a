"""The exceptions a paste holds: the public types, and the draft each dialect fills in."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Frame:
    """One ``File "...", line N, in fn`` entry; ``function`` and ``source`` are "" when absent."""

    file: str
    line: int
    function: str
    source: str


@dataclass(frozen=True, slots=True)
class ParsedException:
    """One exception found in a paste; spans are (start, end) offsets into the original text.

    ``span`` covers the whole traceback (or the bare line), ``message_span`` the message from
    its first to its last character, and ``message_line_spans`` each message line alone, which
    is what to highlight when log prefixes sit between the lines. ``cause_index`` names the
    earlier exception that this one was raised from (``cause_kind`` "cause") or while handling
    (``cause_kind`` "context").
    """

    index: int
    error_class: str
    qualified_class: str
    message: str
    frames: tuple[Frame, ...]
    cause_index: int | None
    cause_kind: str | None
    span: tuple[int, int]
    message_span: tuple[int, int]
    message_line_spans: tuple[tuple[int, int], ...]
    has_traceback: bool


@dataclass(slots=True)
class Draft:
    """An exception being assembled; its index is only known once all streams are merged."""

    qualified_class: str
    message: str
    span: tuple[int, int]
    message_span: tuple[int, int]
    message_line_spans: tuple[tuple[int, int], ...]
    frames: tuple[Frame, ...] = ()
    has_traceback: bool = False
    cause: "Draft | None" = None
    cause_kind: str | None = None
    index: int = -1

    def freeze(self) -> ParsedException:
        """The public, immutable form, once indexes are assigned."""
        name = self.qualified_class
        bare_name, paren, argument = name.partition("(")
        return ParsedException(
            index=self.index,
            error_class=bare_name.rpartition(".")[2] + paren + argument,
            qualified_class=name,
            message=self.message,
            frames=self.frames,
            cause_index=None if self.cause is None else self.cause.index,
            cause_kind=self.cause_kind,
            span=self.span,
            message_span=self.message_span,
            message_line_spans=self.message_line_spans,
            has_traceback=self.has_traceback,
        )


def frame_file(path: str) -> str:
    """A frame's path, with the doubled backslashes of a Windows path that was escaped once
    more (``C:\\\\Users\\\\...`` printed from a string's repr) made single."""
    return path.replace("\\\\", "\\") if "\\\\" in path else path
