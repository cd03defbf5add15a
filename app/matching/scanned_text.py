"""A pasted text as the prefilters and RE2 scan it: its UTF-8 bytes, a form with one byte a
character for Hyperscan, and the line tables that turn either's offsets into lines and
characters, with the windows of whole lines one RE2 call scans at most.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate

MAX_SCAN_BYTES = 32 * 1024
"""Most bytes of a paste one RE2 call scans: confirmation walks the text in windows of whole
lines up to this size (a longer line is scanned in its first MAX_SCAN_BYTES only), and groups
are extracted from subjects no longer than this. With MAX_PROGRAM_SIZE, one call stays under
about 0.1 s whatever the pattern and the paste. A match of a multi-line pattern must fit in
one window."""

_ONE_BYTE = bytes(range(128)) + b"\x80" * 128
_UTF8_CONTINUATION = bytes(range(0x80, 0xC0))


@dataclass(frozen=True, slots=True)
class ScannedText:
    """A pasted text with the line tables that turn engine offsets into lines and back."""

    text: str
    data: bytes  # UTF-8: what RE2 confirms against
    char_starts: list[int]
    byte_starts: list[int]

    @classmethod
    def of(cls, text: str) -> ScannedText:
        lines = text.split("\n")
        char_starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
        if text.isascii():
            return cls(text, text.encode("ascii"), char_starts, char_starts)
        data = text.encode("utf-8", "surrogatepass")
        byte_lengths = (len(line.encode("utf-8", "surrogatepass")) + 1 for line in lines[:-1])
        return cls(text, data, char_starts, list(accumulate(byte_lengths, initial=0)))

    def one_byte(self) -> bytes:
        """The text with every non-ASCII character as the byte 0x80, so that Hyperscan's
        offsets are character offsets and its ``.`` and negated classes still match once per
        character (0x80 is no ASCII literal, word or space character)."""
        if self.char_starts is self.byte_starts:  # ASCII
            return self.data
        return self.data.translate(_ONE_BYTE, _UTF8_CONTINUATION)

    def line_of_char(self, char: int) -> int:
        return bisect_right(self.char_starts, char) - 1

    def window_end(self, line: int) -> int:
        """Where a scan that starts at ``line`` stops (a byte offset): after the last whole
        line within ``MAX_SCAN_BYTES``, or, for a longer line, ``MAX_SCAN_BYTES`` into it at a
        character boundary."""
        start = self.byte_starts[line]
        limit = start + MAX_SCAN_BYTES
        if limit >= len(self.data):
            return len(self.data)
        after = bisect_right(self.byte_starts, limit + 1) - 1  # first line that does not fit
        if after > line:
            return self.byte_starts[after] - 1  # the newline ending the last line that fits
        while self.data[limit] & 0xC0 == 0x80:  # not inside a UTF-8 sequence
            limit -= 1
        return limit

    def char_of_byte(self, line: int, byte: int) -> int:
        if self.char_starts is self.byte_starts:
            return byte
        start = self.byte_starts[line]
        return self.char_starts[line] + len(self.data[start:byte].decode("utf-8", "surrogatepass"))


def one_byte(text: str) -> bytes:
    """``text`` with one byte a character, as ``ScannedText.one_byte`` gives it."""
    if text.isascii():
        return text.encode("ascii")
    return text.encode("utf-8", "surrogatepass").translate(_ONE_BYTE, _UTF8_CONTINUATION)
