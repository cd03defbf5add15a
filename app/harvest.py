"""Raise sites of an upstream release -> draft records.

Walks the Python sources of a released package with `ast` and turns every `raise X(...)` whose
message is built from string literals into a draft record in the seed schema: the message as a
template with `{name}` for each interpolated value, a pattern that fullmatches the real message
(compiles in RE2 and in `re`), the source excerpt around the raise and a stable id. The prose
fields stay null; people fill them in later. Storage and the CLI command live elsewhere: this
module only reads files and returns dataclasses.

Message forms understood: a literal (implicitly concatenated or not), an f-string, a literal's
`.format(...)`, a literal `% args`, `+` concatenation of these (an operand of another kind
becomes a placeholder, since `str + x` only works when `x` is a str), and a local variable
assigned one of these earlier in the same block or an enclosing one of the same function
(`msg += ...` extends it; an assignment to it inside a nested block makes it unknown).
Everything else is counted as skipped, by reason.

Files under `test`, `tests` and `benchmarks` directories are not harvested: errors raised there
are not errors users of the library meet.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import os
import re
import string
import tokenize
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

SCHEMA_VERSION = 2
CONTEXT_LINES = 18  # seeds: the excerpt around a raise at line 216 is lines 198-234
MIN_LITERAL_ALNUM = 4  # fewer literal letters/digits than this cannot identify an error
MAX_MESSAGE_CHARS = 4000  # record.schema.json: errorMessage maxLength
MAX_PATTERN_CHARS = 8000  # record.schema.json: messagePattern maxLength
SLUG_SOURCE_CHARS = 50
ID_HEX_CHARS = 16
MAX_TAGS = 4
MAX_PLACEHOLDER_CHARS = 32
# Values (tensor reprs, lists) may span lines; a scoped flag, unlike a leading `(?s)`, keeps
# patterns composable into one alternation. Lazy, yet fullmatch still takes the whole value.
PLACEHOLDER_REGEX = "(?s:.+?)"
SKIPPED_DIRS = frozenset({"test", "tests", "benchmarks"})
# Directory names that say nothing about the error: package roots and catch-alls.
GENERIC_TAG_DIRS = frozenset(
    "python sglang srt vllm torch utils util internal common impl lib src".split()
)
VERSION_DIR = re.compile(r"v\d+")
CLASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
PERCENT_SPEC = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?[hlL]?"
    r"(?P<conversion>[diouxXeEfFgGcrsa%])"
)
FIELD_ATTRIBUTE_OR_INDEX = re.compile(r"[.\[]")  # `{0.name}`, `{key[1]}`
REGEX_SPECIAL = re.compile(r"[\\.^$|?*+()\[\]{}]|[\x00-\x1f\x7f]")
CONTROL_ESCAPES = {"\n": r"\n", "\r": r"\r", "\t": r"\t"}

ProgressCallback = Callable[[int, int, str], None]
"""Called after each file with (files done, files in all, filePath)."""


class SkipReason(StrEnum):
    """Why a raise statement, or a whole file, gave no draft."""

    RERAISE = "re-raise"
    RERAISE_VARIABLE = "re-raise variable"
    NO_MESSAGE = "no message"
    DYNAMIC_CLASS = "dynamic exception class"
    DYNAMIC_MESSAGE = "dynamic message"
    NO_LITERAL_TEXT = "no literal text"
    MESSAGE_TOO_LONG = "message too long"
    UNPARSABLE_FILE = "unparsable file"


@dataclass(frozen=True)
class Message:
    """A message as the seeds write it: a `{name}` template and its fullmatch pattern."""

    template: str
    pattern: str
    placeholders: tuple[str, ...]


@dataclass(frozen=True)
class RaiseSite:
    """One `raise` statement: where it is, what it raises, and its message or why none."""

    line: int
    qualname: str | None  # Python's __qualname__ of the enclosing def/class; None: module level
    function: str | None  # innermost enclosing function
    class_name: str | None  # innermost enclosing class
    error_class: str | None  # as written, e.g. "torch.OutOfMemoryError"; None for bare raise
    message: Message | None
    skip: SkipReason | None  # set exactly when message is None


@dataclass
class Draft:
    """A draft record plus what the record schema has no field for."""

    record: dict[str, Any]
    function: str | None
    class_name: str | None
    qualname: str | None


@dataclass
class HarvestResult:
    """Drafts of one source tree and the counts that say how complete they are."""

    drafts: list[Draft] = field(default_factory=list)
    files: int = 0  # Python files parsed
    raise_sites: int = 0  # raise statements in them, drafted or skipped
    skipped: Counter[str] = field(default_factory=Counter)  # SkipReason -> raises (or files)


@dataclass(frozen=True)
class _Field:
    """An interpolated value; `hint` is the expression (or field name) it is named after."""

    hint: str


_Part = str | _Field
_Parts = tuple[_Part, ...]
_Env = dict[str, _Parts]  # local name -> message parts it was last assigned


@dataclass(frozen=True)
class _Release:
    """What every draft of one harvest shares."""

    repo: str
    ref: str  # tag or commit: pins githubUrl, recorded as analyzedSha
    analyzed_at: str


@dataclass(frozen=True)
class _Scope:
    """Where a statement sits: enough to name the enclosing function and class."""

    qualname: str | None = None
    function: str | None = None
    class_name: str | None = None
    in_function: bool = False

    def enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> _Scope:
        if self.qualname is None:
            qualname = node.name
        else:
            locals_marker = ".<locals>" if self.in_function else ""
            qualname = f"{self.qualname}{locals_marker}.{node.name}"
        if isinstance(node, ast.ClassDef):
            return _Scope(qualname, self.function, node.name, in_function=False)
        return _Scope(qualname, node.name, self.class_name, in_function=True)


def extract_raises(source: str, rel_path: str = "<unknown>") -> list[RaiseSite]:
    """Every raise statement of one module, in source order; raises SyntaxError if unparsable.

    Usable on its own (e.g. to see whether a known raise moved between releases).
    """
    collector = _RaiseCollector()
    with warnings.catch_warnings():  # upstream's invalid escapes are upstream's to fix
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        tree = ast.parse(source, filename=rel_path)
    collector.block(tree.body, {}, _Scope())
    return collector.sites


def harvest_tree(
    root: Path,
    *,
    repo: str,
    ref: str,
    analyzed_at: str,
    path_prefix: str = "",
    package_dir: str | None = None,
    progress: ProgressCallback | None = None,
) -> HarvestResult:
    """Draft records for every raise site under `root/package_dir` (all of `root` when None).

    filePath is `path_prefix` + the path relative to `root`, so an unpacked wheel with
    `package_dir="vllm"` gives `vllm/...`, and `path_prefix="python/"` gives SGLang's
    `python/sglang/...`. `ref` (tag or commit) pins githubUrl and is the analyzedSha.
    """
    release = _Release(repo, ref, analyzed_at)
    paths = _python_files(root / package_dir if package_dir else root)
    result = HarvestResult()
    with _cyclic_gc_paused():
        for done, path in enumerate(paths, start=1):
            file_path = path_prefix + path.relative_to(root).as_posix()
            try:
                source = _read_source(path)
                sites = extract_raises(source, file_path)
            except (SyntaxError, ValueError, RecursionError):  # ValueError: bad bytes, NUL
                result.skipped[SkipReason.UNPARSABLE_FILE] += 1
            else:
                result.files += 1
                result.raise_sites += len(sites)
                result.skipped.update(site.skip for site in sites if site.skip)
                result.drafts.extend(_file_drafts(sites, source, file_path, release))
            if progress:
                progress(done, len(paths), file_path)
    return result


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Syntax trees hold no cycles, so refcounting frees them; left on, the cycle collector
    rescans the whole heap again and again while they are built. Harvesting torch took
    10 s -> 7 s, and 15 s -> 7.5 s in a process that has torch itself loaded."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _python_files(base: Path) -> list[Path]:
    """The .py files under base, sorted so that runs are reproducible."""
    found: list[Path] = []
    for directory, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and d != "__pycache__")
        found.extend(Path(directory, name) for name in sorted(files) if name.endswith(".py"))
    return found


def _read_source(path: Path) -> str:
    """Decoded as Python does (PEP 263 cookie, universal newlines), so line numbers agree."""
    with tokenize.open(path) as handle:
        return handle.read()


class _RaiseCollector:
    """Walks statement blocks in order, tracking local string variables for each raise."""

    def __init__(self) -> None:
        self.sites: list[RaiseSite] = []

    def block(self, statements: list[ast.stmt], env: _Env, scope: _Scope) -> None:
        for statement in statements:
            self.statement(statement, env, scope)

    def statement(self, node: ast.stmt, env: _Env, scope: _Scope) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            env.pop(node.name, None)
            self.block(node.body, {}, scope.enter(node))
        elif isinstance(node, ast.Raise):
            self.sites.append(_raise_site(node, env, scope))
        elif isinstance(node, ast.Assign):
            value = _parts(node.value, env)
            for target in node.targets:
                _bind(target, value, env)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _bind(node.target, _parts(node.value, env), env)
        elif isinstance(node, ast.AugAssign):
            extended = ast.BinOp(node.target, node.op, node.value)
            _bind(node.target, _parts(extended, env), env)
        else:
            self._nested_blocks(node, env, scope)

    def _nested_blocks(self, node: ast.stmt, env: _Env, scope: _Scope) -> None:
        """Inner blocks see the outer variables; what they assign is unknown afterwards."""
        blocks = [getattr(node, name, None) for name in ("body", "orelse", "finalbody")]
        blocks += [handler.body for handler in getattr(node, "handlers", ())]
        blocks += [case.body for case in getattr(node, "cases", ())]
        for block in blocks:
            if isinstance(block, list):
                self.block(block, dict(env), scope)
        if env:
            for child in ast.walk(node):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    env.pop(child.id, None)


def _bind(target: ast.expr, value: _Parts | None, env: _Env) -> None:
    """Record `name = <message>`; any other binding forgets the names it assigns."""
    if isinstance(target, ast.Name) and value is not None:
        env[target.id] = value
        return
    for child in ast.walk(target):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            env.pop(child.id, None)


def _raise_site(node: ast.Raise, env: _Env, scope: _Scope) -> RaiseSite:
    exc = node.exc
    error_class: str | None = None
    message: Message | None = None
    if exc is None:
        skip: SkipReason | None = SkipReason.RERAISE
    elif not isinstance(exc, ast.Call):
        error_class = ast.unparse(exc)
        # A capitalised name is a class raised without arguments; anything else an instance.
        raised_class = error_class.rpartition(".")[2][:1].isupper()
        skip = SkipReason.NO_MESSAGE if raised_class else SkipReason.RERAISE_VARIABLE
    else:
        error_class = ast.unparse(exc.func)
        if CLASS_NAME.fullmatch(error_class):
            message, skip = _call_message(exc, env)
        else:  # `raise errors[kind](...)`: no class name a record could hold
            skip = SkipReason.DYNAMIC_CLASS
    return RaiseSite(
        node.lineno, scope.qualname, scope.function, scope.class_name, error_class, message, skip
    )


def _call_message(call: ast.Call, env: _Env) -> tuple[Message | None, SkipReason | None]:
    """The message of `X(first_arg, ...)`, or why it has none we can match."""
    if not call.args:  # `X(msg=...)`: the class builds its message, out of our sight
        return None, SkipReason.DYNAMIC_MESSAGE if call.keywords else SkipReason.NO_MESSAGE
    parts = _parts(call.args[0], env)
    if parts is None:
        return None, SkipReason.DYNAMIC_MESSAGE
    literal = "".join(part for part in parts if isinstance(part, str))
    if sum(char.isalnum() for char in literal) < MIN_LITERAL_ALNUM:
        return None, SkipReason.NO_LITERAL_TEXT
    message = _message(parts)
    if len(message.template) > MAX_MESSAGE_CHARS or len(message.pattern) > MAX_PATTERN_CHARS:
        return None, SkipReason.MESSAGE_TOO_LONG
    return message, None


def _parts(node: ast.expr, env: _Env) -> _Parts | None:
    """The literal pieces and interpolated values of a string expression; None if dynamic."""
    if isinstance(node, ast.Constant):
        return (node.value,) if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return tuple(
            value.value if isinstance(value, ast.Constant) else _Field(ast.unparse(value.value))
            for value in node.values
        )
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(node.left, env), _parts(node.right, env)
        if left is None and right is None:
            return None
        return (left or (_Field(ast.unparse(node.left)),)) + (
            right or (_Field(ast.unparse(node.right)),)
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        template = _literal(node.left, env)
        return None if template is None else _percent_parts(template, node.right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        template = _literal(node.func.value, env)
        return None if template is None else _format_parts(template, node)
    return None


def _literal(node: ast.expr, env: _Env) -> str | None:
    """The text of an expression that is a plain string with no interpolation."""
    parts = _parts(node, env)
    if parts is None or not all(isinstance(part, str) for part in parts):
        return None
    return "".join(part for part in parts if isinstance(part, str))


def _percent_parts(template: str, args: ast.expr) -> _Parts | None:
    """`template % args`: positional specs take their names from a tuple's items."""
    specs = list(PERCENT_SPEC.finditer(template))
    if any(spec["width"] == "*" or spec["precision"] == "*" for spec in specs):
        return None
    values = [spec for spec in specs if spec["conversion"] != "%" and spec["key"] is None]
    if not isinstance(args, ast.Tuple):  # one value, or a tuple held in a variable
        hints = iter([ast.unparse(args)] * len(values))
    elif len(args.elts) == len(values) and not any(
        isinstance(item, ast.Starred) for item in args.elts
    ):
        hints = iter([ast.unparse(item) for item in args.elts])
    else:
        return None
    parts: list[_Part] = []
    position = 0
    for spec in [*specs, None]:
        gap = template[position : spec.start() if spec else None]
        if "%" in gap:
            return None  # not a conversion spec: the real call would fail
        if gap:
            parts.append(gap)
        if spec is None:
            break
        if spec["conversion"] == "%":
            parts.append("%")
        else:
            parts.append(_Field(spec["key"] if spec["key"] is not None else next(hints)))
        position = spec.end()
    return tuple(parts)


def _format_parts(template: str, call: ast.Call) -> _Parts | None:
    """`template.format(...)`: positional fields are named after their argument."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return None
    parts: list[_Part] = []
    auto_index = 0
    for literal, field_name, _spec, _conversion in fields:
        if literal:
            parts.append(literal)
        if field_name is None:
            continue
        base = FIELD_ATTRIBUTE_OR_INDEX.split(field_name, maxsplit=1)[0]
        rest = field_name[len(base) :]
        if base and not base.isdigit():
            parts.append(_Field(field_name))
            continue
        index = int(base) if base else auto_index
        auto_index += not base
        args = call.args
        if index < len(args) and not any(isinstance(arg, ast.Starred) for arg in args[: index + 1]):
            parts.append(_Field(ast.unparse(args[index]) + rest))
        else:
            parts.append(_Field(f"arg{index}{rest}"))
    return tuple(parts)


def _message(parts: _Parts) -> Message:
    """Template and pattern with one uniquely named group per interpolated value."""
    template: list[str] = []
    pattern: list[str] = []
    names: list[str] = []
    for part in parts:
        if isinstance(part, str):
            template.append(part)
            pattern.append(REGEX_SPECIAL.sub(_escape_char, part))
            continue
        name = base = _placeholder_name(part.hint)
        suffix = 1
        while name in names:
            suffix += 1
            name = f"{base}_{suffix}"
        names.append(name)
        template.append(f"{{{name}}}")
        pattern.append(f"(?P<{name}>{PLACEHOLDER_REGEX})")
    return Message("".join(template), "".join(pattern), tuple(names))


def _escape_char(match: re.Match[str]) -> str:
    """Escape a regex metacharacter; spell control characters as escapes RE2 and re share."""
    char = match[0]
    if char in CONTROL_ESCAPES:
        return CONTROL_ESCAPES[char]
    if ord(char) < 0x20 or char == "\x7f":
        return f"\\x{ord(char):02x}"
    return "\\" + char


def _placeholder_name(hint: str) -> str:
    """`x` -> x, `self.x` -> x, `len(buffers)` -> len_buffers, `shape[0]` -> shape_0."""
    if hint.isidentifier() and hint.isascii():
        return hint
    name = re.sub(r"[^0-9A-Za-z]+", "_", hint).strip("_")
    name = re.sub(r"^(?:self|cls)_(?=[A-Za-z_])", "", name)[:MAX_PLACEHOLDER_CHARS].rstrip("_")
    if not name:
        return "value"
    return f"v{name}" if name[0].isdigit() else name


def _file_drafts(
    sites: list[RaiseSite], source: str, file_path: str, release: _Release
) -> list[Draft]:
    """Drafts of one file; the n-th raise of a template in a function gets the n-th id."""
    lines = source.split("\n")  # not splitlines(): ast counts only \n as a line break
    if lines[-1] == "":
        lines.pop()
    occurrences: Counter[tuple[str | None, str]] = Counter()
    drafts = []
    for site in sites:
        if site.message is None:
            continue
        key = (site.qualname, site.message.template)
        occurrences[key] += 1
        record = _record(site, site.message, lines, file_path, release, occurrences[key])
        drafts.append(Draft(record, site.function, site.class_name, site.qualname))
    return drafts


def _record(
    site: RaiseSite,
    message: Message,
    lines: list[str],
    file_path: str,
    release: _Release,
    occurrence: int,
) -> dict[str, Any]:
    """The record in the seeds' key order; prose fields null until someone writes them."""
    repo, ref = release.repo, release.ref
    start = max(1, site.line - CONTEXT_LINES)
    end = min(len(lines), site.line + CONTEXT_LINES)
    return {
        "id": _record_id(repo, file_path, site.qualname, message.template, occurrence),
        "repo": repo,
        "slug": _slug(message.template) or _slug(site.error_class or ""),
        "errorCode": None,
        "errorMessage": message.template,
        "messagePattern": message.pattern,
        "errorType": "exception",
        "errorClass": site.error_class,
        "httpStatus": None,
        "severity": "error",
        "filePath": file_path,
        "lineNumber": site.line,
        "sourceCode": "\n".join(lines[start - 1 : end]),
        "sourceCodeStart": start,
        "sourceCodeEnd": end,
        "githubUrl": f"https://github.com/{repo}/blob/{ref}/{file_path}#L{start}-L{end}",
        "documentation": None,
        "triggerScenarios": None,
        "commonSituations": None,
        "solutions": None,
        "exampleFix": None,
        "handlingStrategy": None,
        "validationCode": None,
        "typeGuard": None,
        "tryCatchPattern": None,
        "preventionTips": None,
        "tags": _tags(file_path),
        "backgroundTag": None,
        "analyzedSha": ref,
        "analyzedAt": release.analyzed_at,
        "schemaVersion": SCHEMA_VERSION,
    }


def _record_id(
    repo: str, file_path: str, qualname: str | None, template: str, occurrence: int
) -> str:
    """Independent of the line number, so a raise that only moves keeps its record."""
    key = "\0".join([repo, file_path, qualname or "<module>", template, str(occurrence)])
    return hashlib.sha256(key.encode()).hexdigest()[:ID_HEX_CHARS]


def _slug(text: str) -> str:
    """The seeds' rule: the first 50 characters, lowercased, other runs turned into '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text[:SLUG_SOURCE_CHARS].lower()).strip("-")


def _tags(file_path: str) -> list[str]:
    """Meaningful directory names, outermost first, kebab-cased like the seeds' tags.

    `_dynamo` -> dynamo, `kv_transfer` -> kv-transfer; package roots and catch-alls
    (GENERIC_TAG_DIRS), version directories (`v1`) and one-letter names are dropped.
    """
    tags: list[str] = []
    for part in PurePosixPath(file_path).parent.parts:
        tag = _slug(part)
        if (
            len(tag) > 1
            and tag not in GENERIC_TAG_DIRS
            and not VERSION_DIR.fullmatch(tag)
            and tag not in tags
        ):
            tags.append(tag)
    return tags[:MAX_TAGS]
