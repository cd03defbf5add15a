"""Raise sites of an upstream release -> draft records, with what the code checks.

Walks the Python sources of a released package with `ast` and turns every raise site into a
draft record in the seed schema: the message as a template with `{name}` for each
interpolated value, a pattern that fullmatches the real message (compiles in RE2 and in
`re`), the source excerpt around the raise and a stable id. The prose fields stay null;
people fill them in later. Storage lives in app/harvest/drafts.py; this module only reads files and
returns dataclasses.

Raise sites are `raise X(...)` statements, `assert cond, "message"` (AssertionError) and
`torch._check*(cond, lambda: "message")` calls. Message forms understood: a
literal (implicitly concatenated or not), an f-string, a literal's `.format(...)`, a literal
`% args`, `+` concatenation of these (an operand of another kind becomes a placeholder,
since `str + x` only works when `x` is a str), a local variable assigned one of these earlier
in the same block or an enclosing one of the same function (`msg += ...` extends it; when a
nested `if`, loop or `with` extends it, the message ends in that tail, optional or repeated;
any other assignment to it inside a nested block makes it unknown), a module-level string
constant,
and messages built elsewhere: by an exception factory (a function of the module that
`return`s `SomeError(...)`, followed through factories that call factories) or by the
raised class's own `__init__` (`super().__init__(f"...")`, found anywhere in the release and
inherited by subclasses). A site whose message stays fully dynamic still gets a draft, whose
pattern is one variable part: it is matched by where it was raised, not by its message.

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
from collections import ChainMap, Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from app import upstreams
from app.harvest.context import add_context
from app.harvest.explain import add_explanations
from app.harvest.parts import Env, Field, Item, Joined, ListMark, Maybe, Part, Parts, child_env
from app.harvest.sites import (
    LOCATED_REASONS,
    UNKNOWN_CLASS,
    Draft,
    Factory,
    HarvestResult,
    Message,
    ModuleFacts,
    ProgressCallback,
    RaiseSite,
    SkipReason,
    TryBlock,
)
from app.matching.patterns import program_fits
from app.records.model import ID_LENGTH, SCHEMA_VERSION, max_chars

CONTEXT_LINES = 18  # seeds: the excerpt around a raise at line 216 is lines 198-234
MIN_LITERAL_ALNUM = 4  # fewer literal letters/digits than this cannot identify an error
MAX_MESSAGE_CHARS = max_chars("errorMessage")
MAX_PATTERN_CHARS = max_chars("messagePattern")
MAX_FULL_PATTERN_CHARS = 900  # a longer pattern may outgrow RE2's program limit
MIN_HEAD_CHARS = 80  # the least of a cut message's start worth a pattern
PLACEHOLDER_TEMPLATE_CHARS = 8  # what a `{name}` counts for when a message is cut
SLUG_SOURCE_CHARS = max_chars("slug")
MAX_TAGS = 4
MAX_PLACEHOLDER_CHARS = 32
MAX_FACTORY_DEPTH = 4  # factories calling factories, followed this deep
MAX_GUARD_CHARS = 1000
MAX_DOCSTRING_CHARS = 600
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
# Check functions (torch._check*): the exception each raises when its condition is false.
CHECKS = upstreams.checks()
_CHECK_NAMES = frozenset(name.rpartition(".")[2] for name in CHECKS)
_FLIPPED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_EXITS = (ast.Return, ast.Continue, ast.Break, ast.Raise)

_Found = TypeVar("_Found")  # what `_factory` looks up by the name a call uses


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
    docstring: str | None = None

    def enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> _Scope:
        if self.qualname is None:
            qualname = node.name
        else:
            locals_marker = ".<locals>" if self.in_function else ""
            qualname = f"{self.qualname}{locals_marker}.{node.name}"
        if isinstance(node, ast.ClassDef):
            return _Scope(qualname, self.function, node.name, False, self.docstring)
        return _Scope(qualname, node.name, self.class_name, True, _first_paragraph(node))


@dataclass(frozen=True)
class _Context:
    """What encloses a statement inside its function: `if` tests, `except` clauses."""

    conditions: tuple[ast.expr, ...] = ()
    translates: tuple[str, ...] = ()


def extract_module(source: str, rel_path: str = "<unknown>") -> ModuleFacts:
    """Parse one module (SyntaxError if it cannot be) and collect its facts; the raise
    sites still name factories and classes by name (see `resolve_sites`)."""
    with warnings.catch_warnings():  # upstream's invalid escapes are upstream's to fix
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        tree = ast.parse(source, filename=rel_path)
    collector = _Collector(rel_path, source, _module_constants(tree.body))
    collector.block(tree.body, ChainMap({}), _Scope(), _Context())
    return collector.finish()


def extract_raises(source: str, rel_path: str = "<unknown>") -> list[RaiseSite]:
    """Every raise site of one module, in source order, resolved against the module alone;
    raises SyntaxError if unparsable. Usable on its own (e.g. to see whether a known raise
    moved between releases)."""
    facts = extract_module(source, rel_path)
    return resolve_sites(facts, ReleaseMessages([facts]))


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
    """Draft records, with code context, for every raise site under `root/package_dir`.

    filePath is `path_prefix` + the path relative to `root`, so an unpacked wheel with
    `package_dir="vllm"` gives `vllm/...`, and `path_prefix="python/"` gives SGLang's
    `python/sglang/...`. `ref` (tag or commit) pins githubUrl and is the analyzedSha.
    Modules are parsed once; messages built in another module (a class's `__init__`),
    callers and handlers are resolved over the whole release afterwards.
    """
    release = _Release(repo, ref, analyzed_at)
    paths = _python_files(root / package_dir if package_dir else root)
    result = HarvestResult()
    modules: list[ModuleFacts] = []
    with _cyclic_gc_paused():
        for done, path in enumerate(paths, start=1):
            file_path = path_prefix + path.relative_to(root).as_posix()
            try:
                modules.append(extract_module(_read_source(path), file_path))
            except (SyntaxError, ValueError, RecursionError):  # ValueError: bad bytes, NUL
                result.skipped[SkipReason.UNPARSABLE_FILE] += 1
            if progress:
                progress(done, len(paths), file_path)
        classes = ReleaseMessages(modules)
        result.bases = classes.bases
        for module in modules:
            sites = resolve_sites(module, classes)
            result.files += 1
            result.raise_sites += len(sites)
            drafts = _file_drafts(sites, module.source, module.file_path, release)
            drafted = {id(draft.site) for draft in drafts}
            result.skipped.update(s.skip for s in sites if s.skip and id(s) not in drafted)
            result.located += sum(draft.located for draft in drafts)
            result.drafts.extend(drafts)
        add_context(result.drafts, modules, classes.bases, release.repo, release.ref)
        project = upstreams.BY_REPO.get(repo)
        add_explanations(result.drafts, modules, project, release.repo, release.ref)
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


def _first_paragraph(node: ast.AST) -> str | None:
    """The first paragraph of a function's docstring, on one line."""
    try:
        doc = ast.get_docstring(node)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not doc:
        return None
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    return paragraph[:MAX_DOCSTRING_CHARS] or None


def _module_constants(body: list[ast.stmt]) -> dict[str, Parts]:
    """Module-level names bound once to a string message (`ERR = "bad {}"`): functions see
    them, whatever the order of definitions, since they run after the module is loaded."""
    bound: Counter[str] = Counter()
    for statement in body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign | ast.AugAssign):
            targets = [statement.target]
        for target in targets:
            bound.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    constants: dict[str, Parts] = {}
    for statement in body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if isinstance(target, ast.Name) and bound[target.id] == 1:
            parts = _parts(statement.value, constants)
            if parts is not None:
                constants[target.id] = parts
    return constants


def _negated(test: ast.expr) -> ast.expr:
    """`not test`, simplified only where exact: `not not x` -> x, `a >= b` -> `a < b`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _FLIPPED:
        return ast.Compare(test.left, [_FLIPPED[type(test.ops[0])]()], test.comparators)
    return ast.UnaryOp(ast.Not(), test)


def _guard_text(conditions: tuple[ast.expr, ...]) -> str | None:
    """The conditions joined with `and`, as source text."""
    if not conditions:
        return None
    node = conditions[0] if len(conditions) == 1 else ast.BoolOp(ast.And(), list(conditions))
    text = ast.unparse(node)
    return text if len(text) <= MAX_GUARD_CHARS else text[: MAX_GUARD_CHARS - 1] + "…"


def _early_exit(node: ast.stmt) -> ast.expr | None:
    """The test of `if test: return` (or continue, break, raise): later siblings run only
    when it is false."""
    if isinstance(node, ast.If) and not node.orelse and isinstance(node.body[-1], _EXITS):
        return node.test
    return None


def _caught(handler: ast.ExceptHandler) -> tuple[str, ...]:
    """The short class names an `except` clause catches."""
    if handler.type is None:
        return ("BaseException",)
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return tuple(ast.unparse(t).rpartition(".")[2] for t in types)


class _Collector:
    """Walks statement blocks in order, tracking local string variables, enclosing tests
    and handlers for each raise site, and what resolves messages built elsewhere."""

    def __init__(self, file_path: str, source: str, constants: dict[str, Parts]) -> None:
        self.facts = ModuleFacts(file_path, source)
        self.constants = constants
        self._returns: dict[str, list[tuple[ast.Call, Env]]] = {}
        self._raises: dict[str, list[tuple[ast.Call, Env]]] = {}
        self._params: dict[str, tuple[str, ...]] = {}
        self._lists: dict[str, Parts] = {}  # qualname -> the list of pieces it returns

    def finish(self) -> ModuleFacts:
        """The facts, with the functions that return one exception call as factories, and
        those that raise one message they are given as raising helpers."""
        for found, calls in (
            (self.facts.factories, self._returns),
            (self.facts.raisers, self._raises),
        ):
            for qualname, made in calls.items():
                if len(made) == 1 and qualname in self._params:
                    call, env = made[0]
                    found[qualname] = Factory(self._params[qualname], call, env, qualname=qualname)
        return self.facts

    def block(self, statements: list[ast.stmt], env: Env, scope: _Scope, ctx: _Context) -> None:
        exits: list[ast.expr] = []
        for statement in statements:
            self.statement(statement, env, scope, ctx, tuple(exits))
            test = _early_exit(statement)
            if test is not None:
                exits.append(_negated(test))

    def statement(
        self,
        node: ast.stmt,
        env: Env,
        scope: _Scope,
        ctx: _Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            env.pop(node.name, None)
            self._function(node, scope)
        elif isinstance(node, ast.ClassDef):
            env.pop(node.name, None)
            names = tuple(ast.unparse(base).rpartition(".")[2] for base in node.bases)
            self.facts.bases[node.name] = names
            self.block(node.body, ChainMap({}, self.constants), scope.enter(node), _Context())
        elif isinstance(node, ast.Raise):
            site = _raise_site(node, env, scope)
            self._site(site, ctx, exits)
            if site.call is not None and self._raises_parameter(site.call, env, scope):
                self._raises.setdefault(scope.qualname or "", []).append(
                    (site.call, child_env(env))
                )
        elif isinstance(node, ast.Assert) and node.msg is not None:
            site = _message_site(node, "AssertionError", node.msg, env, scope, "assert")
            self._site(site, ctx, (*exits, _negated(node.test)))
        elif isinstance(node, ast.Assert):  # AssertionError with no message: found by its line
            site = _site_at(
                node, scope, "AssertionError", None, SkipReason.BARE_ASSERT, kind="assert"
            )
            site = replace(site, hint_node=node.test)
            self._site(site, ctx, (*exits, _negated(node.test)), self.facts.bare_asserts)
        elif isinstance(node, ast.Expr) and (appended := _appended(node, env)) is not None:
            name, item = appended
            env[name] = (*env[name], item)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._call_statement(node, node.value, env, scope, ctx, exits)
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            returned = env.get(node.value.id)
            if scope.in_function and scope.qualname and returned and _is_list(returned):
                self._lists[scope.qualname] = (ListMark(), *returned[1:])
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            if scope.in_function and scope.qualname:
                self._returns.setdefault(scope.qualname, []).append((node.value, child_env(env)))
            self._helper_call(node, node.value, env, scope, ctx, exits)
        elif isinstance(node, ast.Assign):
            if isinstance(node.value, ast.Call):  # `total = helper("...")`
                self._helper_call(node, node.value, env, scope, ctx, exits)
            value = _parts(node.value, env) or self._list_value(node.value, env, scope)
            for target in node.targets:
                _bind(target, value, env)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _bind(node.target, _parts(node.value, env), env)
        elif isinstance(node, ast.AugAssign):
            extended = ast.BinOp(node.target, node.op, node.value)
            _bind(node.target, _parts(extended, env), env)
        else:
            self._nested_blocks(node, env, scope, ctx)

    def _list_value(self, node: ast.expr, env: Env, scope: _Scope) -> Parts | None:
        """A list of message pieces: a list literal, or what a function of the module that
        builds and returns one gives (`errors = self._validate_features()`)."""
        if isinstance(node, ast.List | ast.Tuple):
            items = [_parts(element, env) for element in node.elts]
            if any(item is None or _is_list(item) for item in items):
                return None
            return (ListMark(), *(Item(_text_parts(item)) for item in items if item))
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            return _factory(self._lists, ast.unparse(node.func), scope.qualname)
        return None

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        inner = scope.enter(node)
        arguments = node.args
        params = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
        if scope.class_name is not None and not scope.in_function and params:
            params = params[1:]  # self or cls: the caller does not pass it
        self._params[inner.qualname or node.name] = tuple(params)
        self.facts.functions.append((node.lineno, node.end_lineno or node.lineno, node.name))
        self.block(node.body, ChainMap({}, self.constants), inner, _Context())

    def _call_statement(
        self,
        node: ast.Expr,
        call: ast.Call,
        env: Env,
        scope: _Scope,
        ctx: _Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        """A torch check, an `__init__` passing its message to the base class, or a call
        that may be a raising helper's."""
        self._helper_call(node, call, env, scope, ctx, exits)
        func = call.func
        if not isinstance(func, ast.Attribute) or not (
            func.attr == "__init__" or func.attr in _CHECK_NAMES
        ):
            return  # most calls: decided without the cost of unparsing them
        callee = ast.unparse(func)
        if callee in CHECKS and call.args:
            message = call.args[1] if len(call.args) > 1 else None
            message = next((k.value for k in call.keywords if k.arg == "message"), message)
            if isinstance(message, ast.Lambda):
                site = _message_site(node, CHECKS[callee], message.body, env, scope, "check")
                self._site(site, ctx, (*exits, _negated(call.args[0])))
            return
        base_init = callee.endswith(".__init__") and scope.function == "__init__"
        if base_init and scope.class_name and (call.args or call.keywords):
            offset = 0 if callee.startswith("super(") else 1  # Base.__init__(self, msg)
            if len(call.args) > offset:
                params = self._params.get(scope.qualname or "", ())
                factory = Factory(params, call, child_env(env), offset)
                self.facts.init_messages[scope.class_name] = factory

    def _helper_call(
        self,
        node: ast.stmt,
        call: ast.Call,
        env: Env,
        scope: _Scope,
        ctx: _Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        """Keep a call that may be a raising helper's until the release says (see
        `resolve_sites`)."""
        if _may_raise_for_caller(call, env):
            site = _site_at(node, scope, None, None, SkipReason.DYNAMIC_MESSAGE, kind="call")
            site = replace(site, call=call, env=child_env(env))
            self._site(site, ctx, exits, self.facts.helper_calls)

    def _site(
        self,
        site: RaiseSite,
        ctx: _Context,
        exits: tuple[ast.expr, ...],
        into: list[RaiseSite] | None = None,
    ) -> None:
        guard = _guard_text((*ctx.conditions, *exits))
        sites = self.facts.sites if into is None else into
        sites.append(replace(site, guard=guard, translates=ctx.translates))

    def _raises_parameter(self, call: ast.Call, env: Env, scope: _Scope) -> bool:
        """`raise X(message)` where `message` is a parameter of the enclosing function: a
        raising helper (SGLang's `raise_error_or_warn(obj, strict, counter, message)`), whose
        callers pass the message users see."""
        if not scope.in_function or not call.args or not isinstance(call.args[0], ast.Name):
            return False
        name = call.args[0].id
        return name not in env and name in self._params.get(scope.qualname or "", ())

    def _nested_blocks(self, node: ast.stmt, env: Env, scope: _Scope, ctx: _Context) -> None:
        """Inner blocks see the outer variables. Afterwards a message that an `if`, a loop
        or a `with` only extended (`msg += "..."`) ends in that tail, optional where the
        block may not run; any other name they assign is unknown (see `_merged`)."""
        flows: list[Env] | None = None  # envs that reach the next statement, when known
        loops = isinstance(node, ast.For | ast.AsyncFor | ast.While)
        if isinstance(node, ast.If):
            body = self._inner(node.body, _nonempty(env, node.test), scope, _add(ctx, node.test))
            orelse = self._inner(node.orelse, env, scope, _add(ctx, _negated(node.test)))
            flows = [branch for branch in (body, orelse) if branch is not None]
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith):
            body = self._inner(node.body, env, scope, ctx, loops)
            else_body = getattr(node, "orelse", [])
            self.block(else_body, child_env(env), scope, ctx)
            if body is not None and not else_body:
                flows = [body, env] if loops else [body]  # a loop may not run at all
        elif isinstance(node, ast.Try | ast.TryStar):
            self.block(node.body, child_env(env), scope, ctx)
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.lineno
            for handler in node.handlers:
                catches = _caught(handler)
                self.facts.tries.append(TryBlock(first, last, catches, handler.lineno))
                translated = _Context(ctx.conditions, catches)
                self.block(handler.body, child_env(env), scope, translated)
            for block in (node.orelse, node.finalbody):
                self.block(block, child_env(env), scope, ctx)
        else:
            for case in getattr(node, "cases", ()):
                self.block(case.body, child_env(env), scope, ctx)
        if env.maps[0]:
            assigned = {
                child.id
                for child in ast.walk(node)
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)
            } | _append_targets(node)
            rebound = _header_names(node)  # `for msg in ...`, `with ... as msg`: not a tail
            for name in assigned:
                merged = None
                if flows and name not in rebound:
                    merged = _merged(env.get(name), flows, name, loops)
                if merged is None:
                    env.pop(name, None)
                else:
                    env[name] = merged

    def _inner(
        self,
        statements: list[ast.stmt],
        env: Env,
        scope: _Scope,
        ctx: _Context,
        loop_body: bool = False,
    ) -> Env | None:
        """Walk a nested block in a child env; the env, or None when the block always leaves
        (ends in `return` or `raise`, or in `continue` or `break` outside a loop's body)."""
        inner = child_env(env)
        self.block(statements, inner, scope, ctx)
        leaves = (ast.Return, ast.Raise) if loop_body else _EXITS
        return None if statements and isinstance(statements[-1], leaves) else inner


def _may_raise_for_caller(call: ast.Call, env: Env) -> bool:
    """Whether a call statement might be a raising helper's: a function or a method of the
    same class, given an argument that reads as a message. Decided cheaply, since every call
    statement of a release passes here."""
    func = call.func
    if isinstance(func, ast.Attribute):
        if not isinstance(func.value, ast.Name) or func.value.id not in ("self", "cls"):
            return False
    elif not isinstance(func, ast.Name):
        return False
    values = [*call.args, *(keyword.value for keyword in call.keywords)]
    return any(
        isinstance(value, ast.JoinedStr | ast.BinOp)
        or (isinstance(value, ast.Constant) and isinstance(value.value, str))
        or (isinstance(value, ast.Name) and value.id in env)
        for value in values
    )


def _add(ctx: _Context, condition: ast.expr) -> _Context:
    return _Context((*ctx.conditions, condition), ctx.translates)


def _is_list(value: Parts) -> bool:
    """Whether a name's value is a list of message pieces rather than a message."""
    return bool(value) and isinstance(value[0], ListMark)


def _text_parts(parts: Parts) -> Parts:
    """The parts of a message, which hold no list pieces."""
    return tuple(part for part in parts if not isinstance(part, ListMark | Item))


def _appended(node: ast.Expr, env: Env) -> tuple[str, Item] | None:
    """`pieces.append(<message>)` on a list of message pieces: its name and the new piece."""
    call = node.value
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "append"
        and isinstance(call.func.value, ast.Name)
        and len(call.args) == 1
    ):
        return None
    name = call.func.value.id
    if not _is_list(env.get(name, ())):
        return None
    parts = _parts(call.args[0], env)
    if parts is None or _is_list(parts):
        parts = (Field(ast.unparse(call.args[0])),)
    return name, Item(_text_parts(parts))


def _append_targets(node: ast.stmt) -> set[str]:
    """The names a block appends to, which it changes as an assignment would."""
    return {
        child.func.value.id
        for child in ast.walk(node)
        if isinstance(child, ast.Call)
        and isinstance(child.func, ast.Attribute)
        and child.func.attr == "append"
        and isinstance(child.func.value, ast.Name)
    }


def _nonempty(env: Env, test: ast.expr) -> Env:
    """The env inside `if pieces:`, where the list of message pieces holds at least one."""
    if isinstance(test, ast.Name) and _is_list(value := env.get(test.id, ())):
        inner = child_env(env)
        inner[test.id] = (ListMark(nonempty=True), *value[1:])
        return inner
    return env


def _joined(sep: str, value: Parts) -> Parts | None:
    """`sep.join(pieces)` of a list of message pieces; None when no piece is known.

    When the first piece is always there, the message is exact: each later piece follows a
    separator, optional (or repeated) where a condition (or a loop) appended it. When every
    piece is conditional, any of them may come first: a `Joined` of them all."""
    elements: list[tuple[Parts, bool]] = []  # each piece and whether it may be missing

    def collect(parts: Parts, optional: bool, repeats: bool) -> None:
        for part in parts:
            if isinstance(part, Item):
                elements.append((part.parts, optional))
            elif isinstance(part, Maybe):
                collect(part.parts, True, repeats or part.repeats)

    collect(value[1:], False, False)
    if not elements:
        return None
    if not elements[0][1]:
        joined: list[Part] = list(elements[0][0])
        for parts, optional in elements[1:]:
            if optional:
                joined.append(Maybe((sep, *parts), repeats=False))
            else:
                joined.extend((sep, *parts))
        return tuple(joined)
    items = tuple(dict.fromkeys(parts for parts, _ in elements))
    nonempty = isinstance(value[0], ListMark) and value[0].nonempty
    shown = min(_literal_alnum(item) for item in items) if nonempty else 0
    return (Joined(items, sep, not nonempty, shown),)


def _header_names(node: ast.stmt) -> set[str]:
    """The names a compound statement binds outside its blocks: a loop's target, a `with`'s
    `as` names, a walrus in its test or iterable."""
    header = [getattr(node, field, None) for field in ("test", "target", "iter")]
    header += [item.optional_vars for item in getattr(node, "items", ())]
    return {
        child.id
        for part in header
        if isinstance(part, ast.AST)
        for child in ast.walk(part)
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store)
    }


def _merged(before: Parts | None, flows: list[Env], name: str, loops: bool) -> Parts | None:
    """What `name` holds after a nested block, given its value in each env that flows on:
    the value before, followed by the one tail the block added to it (optional when some
    flow left it as it was, repeated for a loop); None when a block did anything else."""
    if before is None:
        return None
    tails = set()
    for flow in flows:
        after = flow.get(name)
        if after is None or after[: len(before)] != before:
            return None
        tails.add(after[len(before) :])
    added = tails - {()}
    if len(added) != 1:
        return before if not added else None
    tail = added.pop()
    if not loops and () not in tails:
        return before + tail
    return (*before, Maybe(tail, repeats=loops))


def _bind(target: ast.expr, value: Parts | None, env: Env) -> None:
    """Record `name = <message>`; any other binding forgets the names it assigns."""
    if isinstance(target, ast.Name) and value is not None:
        env[target.id] = value
        return
    if isinstance(target, ast.Attribute | ast.Subscript):
        return  # `self.x = ...`, `d[k] = ...` bind no name
    for child in ast.walk(target):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            env.pop(child.id, None)


def _raise_site(node: ast.Raise, env: Env, scope: _Scope) -> RaiseSite:
    exc = node.exc
    error_class: str | None = None
    message: Message | None = None
    call: ast.Call | None = None
    hint: ast.expr | None = None
    if exc is None:
        skip: SkipReason | None = SkipReason.RERAISE
    elif not isinstance(exc, ast.Call):
        error_class = ast.unparse(exc)
        # A capitalised name is a class raised without arguments; anything else an instance.
        raised_class = error_class.rpartition(".")[2][:1].isupper()
        skip = SkipReason.NO_MESSAGE if raised_class else SkipReason.RERAISE_VARIABLE
    else:
        error_class = ast.unparse(exc.func)
        hint = exc.args[0] if exc.args else None
        if CLASS_NAME.fullmatch(error_class):
            message, skip = _call_message(exc, env)
            call = exc
        else:  # `raise errors[kind](...)`: no class name a record could hold
            skip = SkipReason.DYNAMIC_CLASS
    env_then = child_env(env) if call is not None else None
    return _site_at(
        node, scope, error_class, message, skip, hint_node=hint, call=call, env=env_then
    )


def _message_site(
    node: ast.stmt, error_class: str, expr: ast.expr, env: Env, scope: _Scope, kind: str
) -> RaiseSite:
    """An assert's or a torch check's site: its class is fixed, its message an expression."""
    message, skip = _parts_message(_parts(expr, env))
    return _site_at(node, scope, error_class, message, skip, kind=kind, hint_node=expr)


def _site_at(
    node: ast.stmt,
    scope: _Scope,
    error_class: str | None,
    message: Message | None,
    skip: SkipReason | None,
    **found: Any,
) -> RaiseSite:
    """A raise site at this statement, in this scope."""
    return RaiseSite(
        node.lineno,
        scope.qualname,
        scope.function,
        scope.class_name,
        error_class,
        message,
        skip,
        docstring=scope.docstring,
        **found,
    )


def _call_message(call: ast.Call, env: Env) -> tuple[Message | None, SkipReason | None]:
    """The message of `X(first_arg, ...)`, or why it has none we can match."""
    if not call.args:  # `X(msg=...)`: the class builds its message, out of our sight
        return None, SkipReason.DYNAMIC_MESSAGE if call.keywords else SkipReason.NO_MESSAGE
    return _parts_message(_parts(call.args[0], env))


def _parts_message(parts: Parts | None) -> tuple[Message | None, SkipReason | None]:
    if parts is None:
        return None, SkipReason.DYNAMIC_MESSAGE
    join = next((i for i, part in enumerate(parts) if isinstance(part, Joined)), None)
    if join is not None:
        return _pieces_message(parts, join)
    if _literal_alnum(parts) < MIN_LITERAL_ALNUM:
        return None, SkipReason.NO_LITERAL_TEXT
    message = _message(parts)
    if len(message.pattern) > MAX_FULL_PATTERN_CHARS and (head := _first_line(parts)):
        message = _message(head)
    while len(message.pattern) > MAX_FULL_PATTERN_CHARS and not program_fits(message.pattern):
        head = _head(parts, len(message.template) * 3 // 4)
        if head is None:
            return None, SkipReason.MESSAGE_TOO_LONG
        message = _message(head)
    if len(message.template) > MAX_MESSAGE_CHARS or len(message.pattern) > MAX_PATTERN_CHARS:
        return None, SkipReason.MESSAGE_TOO_LONG
    return message, None


def _pieces_message(parts: Parts, join: int) -> tuple[Message | None, SkipReason | None]:
    """A message joined from pieces, as one message per piece (`others` holds the rest): a
    pattern of all of them has no text every message shows, so it would name nothing, and
    most messages show one piece. Pieces with too little text of their own are left out."""
    joined = parts[join]
    assert isinstance(joined, Joined)
    found: list[Message] = []
    skip: SkipReason | None = SkipReason.NO_LITERAL_TEXT
    for item in joined.items:
        message, why = _parts_message((*parts[:join], *item, *parts[join + 1 :]))
        if message is None:
            skip = why if skip == SkipReason.NO_LITERAL_TEXT else skip
        elif message not in found:
            found.append(message)
    if not found:
        return None, skip
    return replace(found[0], others=tuple(found[1:])), None


def _literal_alnum(parts: Parts) -> int:
    """Letters and digits of the text every message of the template shows: its literal
    parts, and the least of the pieces a join must show one of."""
    count = sum(char.isalnum() for part in parts if isinstance(part, str) for char in part)
    return count + sum(part.shown for part in parts if isinstance(part, Joined))


def _head(parts: Parts, max_chars: int) -> Parts | None:
    """A long one-line message as its first `max_chars` characters, cut after a word, and the
    rest captured as `{details}`: the whole would compile to more RE2 instructions than the
    index runs, and the start names the error. None when too little is left."""
    head: list[Part] = []
    used = 0
    for part in parts:
        size = len(part) if isinstance(part, str) else PLACEHOLDER_TEMPLATE_CHARS
        if used + size > max_chars or isinstance(part, Maybe | Joined):
            if isinstance(part, str):
                kept = part[: max_chars - used].rpartition(" ")[0]
                if kept:
                    head.append(part[: len(kept) + 1])
                    used += len(kept)
            break
        head.append(part)
        used += size
    if used < MIN_HEAD_CHARS:
        return None
    return (*head, Field("details"))


def _first_line(parts: Parts) -> Parts | None:
    """A long multi-line message as its first line and the rest captured as `{details}`:
    the first line names the error, and a whole page of text would outgrow the pattern
    limits. None for a message of one line."""
    head: list[Part] = []
    for part in parts:
        if isinstance(part, str) and "\n" in part:
            head.append(part[: part.index("\n") + 1])
            return (*head, Field("details"))
        head.append(part)
    return None


class ReleaseMessages:
    """What resolves a message across the modules of a release, by name: the classes whose
    `__init__` builds the message (with what each class inherits from its bases), and the
    module-level raising helpers. A name two definitions share with different messages is
    left out, since the call cannot say which one it means."""

    def __init__(self, modules: list[ModuleFacts]) -> None:
        self.bases: dict[str, tuple[str, ...]] = {}
        inits: dict[str, Factory | None] = {}
        raisers: dict[str, Factory | None] = {}
        for module in modules:
            self.bases.update(module.bases)
            for name, factory in module.init_messages.items():
                _add_unique(inits, name, factory)
            for qualname, factory in module.raisers.items():
                if "." not in qualname:
                    _add_unique(raisers, qualname, factory)
        self._inits = {name: factory for name, factory in inits.items() if factory is not None}
        self.raisers = {name: factory for name, factory in raisers.items() if factory}

    def init_of(self, name: str, depth: int = 0) -> Factory | None:
        """The __init__ message of a class, or of the nearest base that has one."""
        if name in self._inits or depth >= MAX_FACTORY_DEPTH:
            return self._inits.get(name)
        for base in self.bases.get(name, ()):
            if base != name and (found := self.init_of(base, depth + 1)) is not None:
                return found
        return None


def _add_unique(found: dict[str, Factory | None], name: str, factory: Factory) -> None:
    """Keep the factory under its name, or None once two different ones share it."""
    known = found.get(name, factory)
    same = (
        known is not None
        and ast.dump(known.call) == ast.dump(factory.call)
        and known.params == factory.params
    )
    found[name] = factory if same else None


def resolve_sites(facts: ModuleFacts, classes: ReleaseMessages) -> list[RaiseSite]:
    """The module's raise sites, with messages built by factories and `__init__`s filled in,
    then the calls of raising helpers that pass a message, then the asserts without one (at
    the end, so that the ids of the other sites do not depend on them)."""
    resolved = []
    for site in facts.sites:
        if site.call is not None and site.env is not None:
            outcome = _outcome(site.call, site.env, site.qualname, facts.factories, classes, 0)
            if outcome == (UNKNOWN_CLASS, None):
                site = replace(site, error_class=None, message=None, skip=SkipReason.DYNAMIC_CLASS)
            elif outcome is not None:
                error_class, parts = outcome
                message, skip = _parts_message(parts)
                site = replace(site, error_class=error_class, message=message, skip=skip)
        resolved.append(replace(site, call=None, env=None))
    for site in facts.helper_calls:
        if site.call is not None and site.env is not None:
            raised = _helper_raise(site.call, site.env, site.qualname, facts.raisers, classes)
            if raised is not None:
                error_class, message = raised
                resolved.append(
                    replace(
                        site,
                        error_class=error_class,
                        message=message,
                        skip=None,
                        call=None,
                        env=None,
                    )
                )
    resolved.extend(facts.bare_asserts)
    return resolved


def _helper_raise(
    call: ast.Call,
    env: Env,
    scope: str | None,
    raisers: dict[str, Factory],
    release: ReleaseMessages,
) -> tuple[str, Message] | None:
    """(class, message) that a call of a raising helper raises, when the call names one of
    this module or a module-level one of the release and passes it a message with text."""
    callee = ast.unparse(call.func)
    raiser = _factory(raisers, callee, scope) or release.raisers.get(callee)
    if raiser is None:
        return None
    parts = _parts(raiser.call.args[0], raiser.env | _bindings(raiser, call, env))
    message, _ = _parts_message(parts)
    return None if message is None else (ast.unparse(raiser.call.func), message)


def _factory(factories: dict[str, _Found], callee: str, scope: str | None) -> _Found | None:
    """The factory a call names, seen from the function `scope`: a function nested in it or
    in an enclosing one, a method of the enclosing class (`self.name`), or the module's."""
    owner, _, name = callee.rpartition(".")
    if owner not in ("", "self", "cls"):
        return None
    prefixes = []
    parts = scope.split(".") if scope else []
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if not prefix.endswith("<locals>"):
            prefixes += [f"{prefix}.<locals>.{name}", f"{prefix}.{name}"]
    for qualname in [*prefixes, name]:
        if qualname in factories:
            return factories[qualname]
    return None


def _outcome(
    call: ast.Call,
    env: Env,
    scope: str | None,
    factories: dict[str, Factory],
    classes: ReleaseMessages,
    depth: int,
) -> tuple[str, Parts | None] | None:
    """(class, message parts) of `raise call` when a factory or an `__init__` builds them;
    None when the call is a plain class taking its message as first argument."""
    callee = ast.unparse(call.func)
    factory = _factory(factories, callee, scope) if depth < MAX_FACTORY_DEPTH else None
    if factory is not None:
        inner = factory.env | _bindings(factory, call, env)
        returned = ast.unparse(factory.call.func)
        found = _outcome(factory.call, inner, factory.qualname, factories, classes, depth + 1)
        if found is not None:
            return found
        if not _class_like(returned):
            return UNKNOWN_CLASS, None  # a call we cannot follow: the class is unknown
        args = factory.call.args
        return returned, _parts(args[0], inner) if args else None
    init = classes.init_of(callee.rpartition(".")[2])
    if init is None:
        return None
    arguments = init.env | _bindings(init, call, env)
    message = init.call.args[init.message_arg]
    return callee, _parts(message, arguments)


def _class_like(callee: str) -> bool:
    """`ValueError`, `errors.Custom`: a dotted name whose last part is capitalised."""
    return bool(CLASS_NAME.fullmatch(callee)) and callee.rpartition(".")[2][:1].isupper()


def _bindings(factory: Factory, call: ast.Call, env: Env) -> dict[str, Parts]:
    """The factory's parameters bound to the call's arguments, as message parts; one the
    call leaves to its default stays a placeholder named after it."""
    bound: dict[str, Parts] = {param: (Field(param),) for param in factory.params}
    for param, arg in zip(factory.params, call.args, strict=False):
        if isinstance(arg, ast.Starred):
            break
        bound[param] = _parts(arg, env) or (Field(ast.unparse(arg)),)
    for keyword in call.keywords:
        if keyword.arg in factory.params:
            bound[keyword.arg] = _parts(keyword.value, env) or (Field(ast.unparse(keyword.value)),)
    return bound


def _parts(node: ast.expr, env: Mapping[str, Parts]) -> Parts | None:
    """The literal pieces and interpolated values of a string expression; None if dynamic."""
    if isinstance(node, ast.Constant):
        return (node.value,) if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts: list[Part] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))  # an f-string's literal pieces are str
            elif isinstance(value, ast.FormattedValue):
                inner = value.value
                plain = value.conversion == -1 and value.format_spec is None
                if _plain_name(value) and isinstance(inner, ast.Name) and inner.id in env:
                    named = env[inner.id]
                    parts.extend((Field(inner.id),) if _is_list(named) else named)
                elif plain and (join := _join_call(inner, env)) is not None:
                    parts.extend(join)
                else:
                    parts.append(Field(ast.unparse(inner)))
        return tuple(parts)
    if isinstance(node, ast.Name):
        bound = env.get(node.id)
        return None if bound is None or _is_list(bound) else bound
    if (join := _join_call(node, env)) is not None:
        return join
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(node.left, env), _parts(node.right, env)
        if left is None and right is None:
            return None
        return (left or (Field(ast.unparse(node.left)),)) + (
            right or (Field(ast.unparse(node.right)),)
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


def _join_call(node: ast.expr, env: Mapping[str, Parts]) -> Parts | None:
    """`"sep".join(pieces)` where `pieces` is a list of message pieces built before."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Name)
    ):
        return None
    value = env.get(node.args[0].id)
    return _joined(node.func.value.value, value) if value and _is_list(value) else None


def _plain_name(value: ast.expr) -> bool:
    """An f-string field that is a bare name with no conversion or format: `{msg}`."""
    return (
        isinstance(value, ast.FormattedValue)
        and isinstance(value.value, ast.Name)
        and value.conversion == -1
        and value.format_spec is None
    )


def _literal(node: ast.expr, env: Mapping[str, Parts]) -> str | None:
    """The text of an expression that is a plain string with no interpolation."""
    parts = _parts(node, env)
    if parts is None or not all(isinstance(part, str) for part in parts):
        return None
    return "".join(part for part in parts if isinstance(part, str))


def _percent_parts(template: str, args: ast.expr) -> Parts | None:
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
    parts: list[Part] = []
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
            parts.append(Field(spec["key"] if spec["key"] is not None else next(hints)))
        position = spec.end()
    return tuple(parts)


def _format_parts(template: str, call: ast.Call) -> Parts | None:
    """`template.format(...)`: positional fields are named after their argument."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return None
    parts: list[Part] = []
    auto_index = 0
    for literal, field_name, _spec, _conversion in fields:
        if literal:
            parts.append(literal)
        if field_name is None:
            continue
        base = FIELD_ATTRIBUTE_OR_INDEX.split(field_name, maxsplit=1)[0]
        rest = field_name[len(base) :]
        if base and not base.isdigit():
            parts.append(Field(field_name))
            continue
        index = int(base) if base else auto_index
        auto_index += not base
        args = call.args
        if index < len(args) and not any(isinstance(arg, ast.Starred) for arg in args[: index + 1]):
            parts.append(Field(ast.unparse(args[index]) + rest))
        else:
            parts.append(Field(f"arg{index}{rest}"))
    return tuple(parts)


def _message(parts: Parts) -> Message:
    """Template and pattern with one uniquely named group per interpolated value."""
    template: list[str] = []
    pattern: list[str] = []
    names: list[str] = []
    _render(parts, template, pattern, names)
    return Message("".join(template), "".join(pattern), tuple(names))


def _render(parts: Parts, template: list[str], pattern: list[str], names: list[str]) -> None:
    """Append the parts' template and pattern text. An optional tail is written out in the
    template (the message as it reads when the tail is there) and optional in the pattern;
    a join is written out with every piece, and in the pattern is one or more of them."""
    for part in parts:
        if isinstance(part, str):
            template.append(part)
            pattern.append(REGEX_SPECIAL.sub(_escape_char, part))
        elif isinstance(part, Maybe):
            pattern.append("(?:")
            _render(part.parts, template, pattern, names)
            pattern.append(")*" if part.repeats else ")?")
        elif isinstance(part, Joined):
            _render_join(part, template, pattern, names)
        elif isinstance(part, ListMark | Item):
            continue  # a list is never a message; `_parts` never puts one in
        else:
            name = base = _placeholder_name(part.hint)
            suffix = 1
            while name in names:
                suffix += 1
                name = f"{base}_{suffix}"
            names.append(name)
            template.append(f"{{{name}}}")
            pattern.append(f"(?P<{name}>{PLACEHOLDER_REGEX})")


def _render_join(join: Joined, template: list[str], pattern: list[str], names: list[str]) -> None:
    """`(?:(?:A|B)(?:SEP)?)+`: the pieces in any order and number, as conditions decide. One
    copy of each piece keeps the pattern within the engine's program limit; it also takes
    pieces written without their separator, which no real message has."""
    alternatives = []
    for item in join.items:
        written: list[str] = []
        alternative: list[str] = []
        _render(item, written, alternative, names)
        alternatives.append("".join(alternative))
        template.append(join.sep if len(alternatives) > 1 else "")
        template.extend(written)
    sep = REGEX_SPECIAL.sub(_escape_char, join.sep)
    repeat = "*" if join.optional else "+"
    pattern.append(f"(?:(?:{'|'.join(alternatives)})(?:{sep})?){repeat}")


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
    """Drafts of one file; the n-th raise of a template in a function gets the n-th id.

    A site whose message is fully dynamic gets a draft whose template is one placeholder,
    named after the expression it raises (`{msg}`): it is matched by where it raises.
    """
    lines = source.split("\n")  # not splitlines(): ast counts only \n as a line break
    if lines[-1] == "":
        lines.pop()
    occurrences: Counter[tuple[str | None, str]] = Counter()
    drafts = []
    for site in sites:
        message = site.message
        located = message is None and site.skip in LOCATED_REASONS
        if located:
            hint = ast.unparse(site.hint_node) if site.hint_node is not None else "message"
            message = _message((Field(hint),))
        if message is None:
            continue
        for piece in (message, *message.others):
            key = (site.qualname, piece.template)
            occurrences[key] += 1
            record = _record(site, piece, lines, file_path, release, occurrences[key])
            if site.skip == SkipReason.DYNAMIC_CLASS:
                record["errorClass"] = UNKNOWN_CLASS
            draft = Draft(record, site.function, site.class_name, site.qualname, located, site)
            drafts.append(draft)
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
    return hashlib.sha256(key.encode()).hexdigest()[:ID_LENGTH]


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
