"""C++ and CUDA sources -> native raise sites: the checks of torch's error macros.

A native site is one `TORCH_CHECK(cond, "a ", x, " b")` (or one of its friends) in a `.cpp`,
`.cu`, `.cuh` or `.h` file: c10 joins the message's pieces with `c10::str`, so literals are
text and every other argument a value (`a {x} b`, named after its expression as Python sites
are). The macro says which class Python users see (`TORCH_CHECK_VALUE` -> ValueError;
`TORCH_CHECK_WITH(CuDNNError, cond, ...)` and `C10_THROW_ERROR` name c10's class). Sites
become drafts through the same rendering as Python ones (app/harvest/site_records.py), so a native
site has one record, with its locations in every release, exactly like a `raise`.

The reading is lexical, not a compiler's: comments are blanked, string and character literals
kept whole, arguments split at top-level commas. A site inside a `#define` keeps `#x` (the
macro's stringized argument) as a value, and its `__VA_ARGS__` as details its uses may add or
leave out; the definitions of the check macros themselves are not sites.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from app.harvest.message_pieces import Field, Maybe, Part, Parts
from app.harvest.messages import parts_message
from app.harvest.sites import RaiseSite, SkipReason
from app.upstreams.unpacking import NATIVE_SUFFIXES

MAX_NATIVE_FILE_BYTES = 4_000_000  # generated tables, not code with checks
RUNTIME_ERROR = "RuntimeError"
WARNING = "UserWarning"  # what torch's warning handler issues in Python for TORCH_WARN
FUNCTION_HEAD_CHARS = 3000  # how far before a `{` its function's name may be

# The check macros -> the Python class their failure raises and where the message begins.
# `STD_TORCH_CHECK*` are the stable-ABI spellings vLLM's kernels use; they raise the same.
CHECK_CLASSES = {
    "TORCH_CHECK": RUNTIME_ERROR,
    "TORCH_CHECK_VALUE": "ValueError",
    "TORCH_CHECK_INDEX": "IndexError",
    "TORCH_CHECK_TYPE": "TypeError",
    "TORCH_CHECK_NOT_IMPLEMENTED": "NotImplementedError",
    "TORCH_CHECK_LINALG": "torch.linalg.LinAlgError",
    "TORCH_INTERNAL_ASSERT": RUNTIME_ERROR,
    "STD_TORCH_CHECK": RUNTIME_ERROR,
    "STD_TORCH_CHECK_NOT_IMPLEMENTED": RUNTIME_ERROR,
}
# The stable-ABI checks throw std::runtime_error with `func, file:line, ` before the message
# (torch/headeronly/util/Exception.h); vLLM's NOT_IMPLEMENTED one adds a word of its own.
STD_HEAD: Parts = (Field("function"), ", ", Field("file"), ":", Field("line"), ", ")
STD_WORDS = {"STD_TORCH_CHECK_NOT_IMPLEMENTED": "NotImplementedError: "}
MESSAGE_ONLY = {"AT_ERROR": RUNTIME_ERROR, "TORCH_WARN": WARNING, "TORCH_WARN_ONCE": WARNING}
# c10's exception classes (C10_THROW_ERROR's first argument) -> what Python raises.
C10_CLASSES = {
    "Error": RUNTIME_ERROR,
    "ValueError": "ValueError",
    "IndexError": "IndexError",
    "TypeError": "TypeError",
    "NotImplementedError": "NotImplementedError",
    "LinAlgError": "torch.linalg.LinAlgError",
    "OutOfMemoryError": "torch.OutOfMemoryError",
    "AcceleratorError": "torch.AcceleratorError",
    "DistError": "torch.distributed.DistError",
    "DistBackendError": "torch.distributed.DistBackendError",
    "DistStoreError": "torch.distributed.DistStoreError",
    "DistNetworkError": "torch.distributed.DistNetworkError",
    "EnforceFiniteError": RUNTIME_ERROR,
    "OnnxfiBackendSystemError": RUNTIME_ERROR,
    "CuDNNError": RUNTIME_ERROR,  # ATen/cuda/Exceptions.h's, a c10::Error
}
# `TORCH_CHECK_WITH(ErrorType, cond, "a ", x)`: a check that throws one of c10's classes.
CHECK_WITH = "TORCH_CHECK_WITH"
ALL_MACROS = (*CHECK_CLASSES, *MESSAGE_ONLY, CHECK_WITH, "C10_THROW_ERROR", "CUDA_KERNEL_ASSERT")
# Every macro's name holds one of these: a file without any has no site and is not lexed.
_MACRO_BYTES = (
    b"TORCH_CHECK",
    b"TORCH_INTERNAL_ASSERT",
    b"TORCH_WARN",
    b"AT_ERROR",
    b"C10_THROW_ERROR",
    b"CUDA_KERNEL_ASSERT",
)
_MACRO = re.compile(r"\b(" + "|".join(sorted(ALL_MACROS, key=len, reverse=True)) + r")\s*\(")
# What c10 prints for a failed check without a message, and for an internal assert.
NO_MESSAGE_TAIL = (
    " to be true, but got false.  (Could this error message be improved?  "
    "If so, please report an enhancement request to PyTorch.)"
)
INTERNAL_ASSERT_TEXT = " INTERNAL ASSERT FAILED at "
INTERNAL_ASSERT_TAIL = ", please report a bug to PyTorch. "
_STRINGIZED_PIECE = re.compile(r'#\s*[A-Za-z_]\w*|(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*"')
_STRINGIZED = re.compile(r'\s*(?:(?:#\s*[A-Za-z_]\w*|(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")\s*)+')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'", "?": "?"}
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_STRING_PREFIX = re.compile(r"(?:u8|u|U|L)?$")
_CONTROL_WORDS = frozenset(
    "if for while switch catch return sizeof decltype alignof static_assert defined".split()
)
_IDENTIFIER = re.compile(r"[A-Za-z_~][A-Za-z0-9_]*(?:::~?[A-Za-z_][A-Za-z0-9_]*)*")
_DEFINE_HEAD = re.compile(r"[ \t]*#[ \t]*define[ \t]+\w+\(([^)]*)\)")
_DIRECTIVE = re.compile(r"\s*#\s*(?:define\s+$|if|elif|undef)")
_BRACES = re.compile(r"[{}]")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:~")
_TRAILING_WORD = re.compile(r"[A-Za-z_]+$")
_QUALIFIERS = frozenset({"const", "noexcept", "override", "final", "mutable"})


@dataclass
class NativeFile:
    """One C++/CUDA file's native sites (and why the others have no message)."""

    file_path: str
    source: str
    sites: list[RaiseSite]
    skipped: Counter[str]


def native_files(base: Path) -> list[Path]:
    """The C++/CUDA sources under base, sorted so that runs are reproducible; tests and
    benchmarks left out, as for Python."""
    found: list[Path] = []
    for directory, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in {"test", "tests", "benchmarks"})
        found.extend(
            Path(directory, name) for name in sorted(files) if name.endswith(NATIVE_SUFFIXES)
        )
    return found


def read_native(path: Path, file_path: str) -> NativeFile:
    """A file's sites; an unreadable or huge file is skipped whole with its reason."""
    try:
        data = path.read_bytes()
    except OSError:
        return NativeFile(file_path, "", [], Counter({SkipReason.UNPARSABLE_FILE: 1}))
    if len(data) > MAX_NATIVE_FILE_BYTES or b"\0" in data:
        return NativeFile(file_path, "", [], Counter({SkipReason.UNPARSABLE_FILE: 1}))
    if not any(name in data for name in _MACRO_BYTES):
        return NativeFile(file_path, "", [], Counter())
    source = data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    sites, skipped = native_sites(source)
    return NativeFile(file_path, source, sites, skipped)


def native_sites(source: str) -> tuple[list[RaiseSite], Counter[str]]:
    """Every check macro's site in one C++/CUDA source, in source order, and the count of
    those without a message to match (a message that is one variable, say)."""
    code, plain = _blank(source)
    functions = _functions(code)
    starts = [0, *(newline.end() for newline in re.finditer("\n", code))]
    sites: list[RaiseSite] = []
    skipped: Counter[str] = Counter()
    for found in _MACRO.finditer(code):
        start = found.start()
        line_start = code.rfind("\n", 0, start) + 1
        if _DIRECTIVE.match(code, line_start, start):
            continue  # the macro's own definition, or an #ifdef line naming it
        args = _arguments(code, plain, found.end())
        if args is None:
            skipped[SkipReason.UNPARSABLE_FILE] += 1
            continue
        macro = found.group(1)
        condition = args[1] if macro == CHECK_WITH and len(args) > 1 else (args or [""])[0]
        if _squash(condition) in _define_parameters(code, starts, start):
            continue  # a macro that forwards its own condition: its uses are the sites
        error_class, kind, level, parts = _message_parts(macro, args)
        if parts is None:
            skipped[SkipReason.DYNAMIC_CLASS] += 1
            continue
        message, skip = parts_message(parts)
        line = bisect_right(starts, start)
        function = _function_at(functions, start)
        if message is None:
            skipped[skip or SkipReason.NO_MESSAGE] += 1
            continue
        checks = macro in CHECK_CLASSES or macro == CHECK_WITH
        guard = _squash(condition) if checks and condition else None
        sites.append(
            RaiseSite(
                line=line,
                qualname=function,
                function=function,
                class_name=None,
                error_class=error_class,
                message=message,
                skip=None,
                kind=kind,
                level=level,
                guard=guard,
                macro=macro,
            )
        )
    return sites, skipped


def _define_parameters(code: str, starts: list[int], offset: int) -> tuple[str, ...]:
    """The parameters of the `#define NAME(a, b)` whose body holds the offset, if any: its
    logical line runs back over lines that end with a backslash."""
    line = bisect_right(starts, offset) - 1
    while line > 0 and starts[line] >= 2 and code[starts[line] - 2] == "\\":
        line -= 1
    found = _DEFINE_HEAD.match(code, starts[line])
    return tuple(p.strip() for p in found.group(1).split(",")) if found else ()


def _message_parts(macro: str, args: list[str]) -> tuple[str | None, str, str | None, Parts | None]:
    """The class, kind, level and message pieces of one macro's use."""
    if macro == "C10_THROW_ERROR":
        error_class = C10_CLASSES.get(args[0].strip().rpartition("::")[2]) if args else None
        return error_class, "check", None, _pieces(args[1:]) if error_class else None
    if macro == CHECK_WITH:
        error_class = C10_CLASSES.get(args[0].strip().rpartition("::")[2]) if args else None
        cond = _squash(args[1]) if len(args) > 1 else ""
        message = _pieces(args[2:])
        if error_class is None:
            return None, "check", None, None
        return error_class, "check", None, message or (f"Expected {cond}{NO_MESSAGE_TAIL}",)
    if macro == "CUDA_KERNEL_ASSERT":
        # What the device prints: `file:line: kernel: block: [..], thread: [..] Assertion
        # `cond` failed.`; the assertion and its condition are the words that identify it.
        cond = _squash(args[0]) if args else ""
        return RUNTIME_ERROR, "assert", None, (Field("where"), f"Assertion `{cond}` failed.")
    if macro in MESSAGE_ONLY:
        error_class = MESSAGE_ONLY[macro]
        kind, level = ("warning", "WARNING") if error_class == WARNING else ("check", None)
        return error_class, kind, level, _pieces(args)
    error_class = CHECK_CLASSES[macro]
    cond = _squash(args[0]) if args else ""
    message = _pieces(args[1:])
    if macro.endswith("TORCH_INTERNAL_ASSERT"):
        # C10_STRINGIZE(__FILE__) prints the file between quotes.
        file = (f'{cond}{INTERNAL_ASSERT_TEXT}"', Field("file"), '":', Field("line"))
        head: Parts = (*file, INTERNAL_ASSERT_TAIL)
        return error_class, "check", None, (*head, *message)
    if macro.startswith("STD_"):
        words = STD_WORDS.get(macro)
        return error_class, "check", None, (*STD_HEAD, *((words,) if words else ()), *message)
    if not message:
        return error_class, "check", None, (f"Expected {cond}{NO_MESSAGE_TAIL}",)
    return error_class, "check", None, message


def _pieces(args: list[str]) -> Parts:
    """`"a ", x, " b"` -> ("a ", Field("x"), " b"): what `c10::str` joins."""
    parts: list[Part] = []
    for arg in args:
        for operand in _operands(arg):
            text = _literal(operand)
            if text is None:
                hint = _squash(operand).lstrip("#").strip().replace("this->", "")
                # A macro's own `__VA_ARGS__`: the details its uses may add, or none.
                vararg = hint == "__VA_ARGS__"
                parts.append(Maybe((Field("details"),)) if vararg else Field(hint))
            elif parts and isinstance(parts[-1], str):
                parts[-1] += text
            elif text:
                parts.append(text)
    return tuple(parts)


def _operands(arg: str) -> list[str]:
    """`"a: " + std::string(x)` -> its operands, when a literal is one of them (a sum of
    strings); `#x " must be (" #__VA_ARGS__ ")"` in a macro -> its stringized arguments and
    literals; any other argument whole."""
    if _STRINGIZED.fullmatch(arg):
        return _STRINGIZED_PIECE.findall(arg)
    code, _ = _blank(arg)
    cuts = [-1]
    depth = 0
    for i, char in enumerate(code):
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
        elif char == "+" and depth == 0 and code[i - 1 : i + 2].count("+") == 1:
            cuts.append(i)
    if len(cuts) == 1:
        return [arg]
    cuts.append(len(arg))
    operands = [arg[a + 1 : b] for a, b in pairwise(cuts)]
    if not any(_literal(operand) is not None for operand in operands):
        return [arg]
    return operands


def _literal(arg: str) -> str | None:
    """The text of an argument made of string literals only (`"a" "b"`), else None."""
    arg = arg.strip()
    if not arg or arg[-1] not in "\"'":
        return None
    out: list[str] = []
    at = 0
    while at < len(arg):
        if arg[at].isspace():
            at += 1
            continue
        quote = arg.find('"', at) if arg[at] != "'" else at
        if quote == -1 or not _STRING_PREFIX.match(arg[at:quote]):
            return None
        end = _literal_end(arg, quote)
        if end is None:
            return None
        out.append(_unescape(arg[quote + 1 : end - 1]))
        at = end
    return "".join(out)


def _literal_end(text: str, quote_at: int) -> int | None:
    """The offset just past the literal that opens at `quote_at`."""
    quote = text[quote_at]
    at = quote_at + 1
    while at < len(text):
        char = text[at]
        if char == "\\":
            at += 2
            continue
        if char == quote:
            return at + 1
        if char == "\n":
            return None
        at += 1
    return None


def _unescape(body: str) -> str:
    def one(match: re.Match[str]) -> str:
        escape = match.group(1)
        if escape[0] == "x":
            return chr(int(escape[1:], 16))
        if escape[0] in "01234567":
            return chr(int(escape, 8))
        return _ESCAPES.get(escape, escape)

    return _ESCAPE.sub(one, body)


def _squash(text: str) -> str:
    """An expression as the preprocessor stringizes it: runs of white space as one."""
    return " ".join(text.split())


_LEXEMES = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)"  # comments
    r'|R"(?P<delim>[^()\\\s"]{0,16})\((?:.*?)\)(?P=delim)"'  # raw literals
    r'|"(?:\\.|[^"\\\n])*"?'  # string literals
    r"|(?<![A-Za-z0-9_])'(?:\\.|[^'\\\n])*'?",  # character literals (not 1'000)
    re.DOTALL,
)


def _blank(source: str) -> tuple[str, str]:
    """Two copies of the source as long as it: `code` with comments and the inside of every
    literal blanked (the structure: parentheses, braces, macro names), `plain` with only the
    comments blanked (the arguments' text, literals included). New lines stay, so that
    offsets count lines alike."""
    code: list[str] = []
    plain: list[str] = []
    at = 0
    for lexeme in _LEXEMES.finditer(source):
        text = lexeme.group()
        code.append(source[at : lexeme.start()])
        plain.append(source[at : lexeme.start()])
        if text[0] == "/":
            blank = re.sub(r"[^\n]", " ", text)
            code.append(blank)
            plain.append(blank)
        else:
            opening = text.index(text[-1]) + 1 if text[-1] in "\"'" else 1
            inside = re.sub(r"[^\n]", " ", text[opening:-1])
            code.append(text[:opening] + inside + text[-1])
            plain.append(text)
        at = lexeme.end()
    code.append(source[at:])
    plain.append(source[at:])
    return "".join(code), "".join(plain)


def _arguments(code: str, plain: str, at: int) -> list[str] | None:
    """The macro's arguments, split at top-level commas; None when the call never closes."""
    depth = 0
    args: list[str] = []
    start = at
    for i in range(at, min(len(code), at + 20_000)):
        char = code[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                args.append(plain[start:i])
                return [arg.replace("\\\n", " ") for arg in args if arg.strip()]
            depth -= 1
        elif char == "," and depth == 0:
            args.append(plain[start:i])
            start = i + 1
    return None


def _functions(code: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each function body: a `{` after `name(...)` that is not a
    control statement. Lambdas and class bodies have no name and are skipped."""
    found: list[tuple[int, int, str]] = []
    stack: list[tuple[int, str | None]] = []
    for brace in _BRACES.finditer(code):
        i = brace.start()
        if brace.group() == "{":
            stack.append((i, _function_name(code, i)))
        elif stack:
            opened, name = stack.pop()
            if name:
                found.append((opened, i, name))
    return found


def _function_name(code: str, brace: int) -> str | None:
    """The name before the `(...)` that ends right before this `{`, unless it is a control
    statement (`if`, `for`, ...); None for lambdas, classes and initialisers."""
    close = brace - 1
    while True:
        while close >= 0 and code[close].isspace():
            close -= 1
        word = _TRAILING_WORD.search(code, max(0, close - 12), close + 1)
        if word is None or word.group() not in _QUALIFIERS:
            break
        close = word.start() - 1
    if close < 0 or code[close] != ")":
        return None
    depth = 0
    for i in range(close, max(-1, close - FUNCTION_HEAD_CHARS), -1):
        if code[i] == ")":
            depth += 1
        elif code[i] == "(":
            depth -= 1
            if depth == 0:
                end = i
                while end and code[end - 1].isspace():
                    end -= 1
                start = end
                while start and code[start - 1] in _NAME_CHARS:
                    start -= 1
                name = code[start:end]
                if not _IDENTIFIER.fullmatch(name) or name.rpartition("::")[2] in _CONTROL_WORDS:
                    return None
                return name
    return None


def _function_at(functions: list[tuple[int, int, str]], offset: int) -> str | None:
    """The innermost named function body holding the offset."""
    best: tuple[int, int, str] | None = None
    for start, end, name in functions:
        if start < offset < end and (best is None or start > best[0]):
            best = (start, end, name)
    return best[2] if best else None
