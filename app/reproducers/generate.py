"""Reproducer scripts generated from a raise site and the condition that guards it.

For a draft whose raise statement sits in a function or method of a module of its release,
the function is read again from the release's source (AST), the conditions on the way to the
raise are collected (the `if` tests around it, and the earlier `if ...: return|raise` that
must be false), and a bounded search over candidate values taken from the guard's literals
finds values that make the guard true (the trigger) and values that make it false while the
path to it stays the same (the fix). The call that reaches the function is, in order of
preference: the public constructor or function with those values as keyword arguments; the
constructor of a dataclass-like class whose fields the guard reads, when the guarded method
runs on construction; else the object made without its __init__ (`cls.__new__(cls)`), only
the attributes the guard reads set, and the method called ("state set directly, not through
the constructor").

Everything a guard may read is a parameter, an attribute of `self`, or a module constant;
anything else (locals computed in the function, calls, other objects) and every other shape
of site gets no script, and the reason is counted (`Reason`). Nothing here runs upstream
code: the scripts are verified on the real release by `app.reproducers.runner`.
"""

import ast
import copy
import functools
import itertools
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MAX_SUBJECTS = 3  # values the search chooses at once
MAX_CANDIDATES = 24  # values tried per subject
MAX_COMBINATIONS = 20_000  # guard evaluations per site: the search's budget
DIRECT_STATE_NOTE = "state set directly, not through the constructor"
# A condition on the way to the raise that asks for CUDA: the script is for the GPU runner.
_CUDA = re.compile(r"cuda", re.IGNORECASE)


class Reason(StrEnum):
    """Why a site gets no generated script."""

    NO_SOURCE = "the source file is not in the release"
    NOT_INSTALLED = (
        "raised in an older release of a project run as installed (torch), not in the one"
        " installed here"
    )
    MODULE_LEVEL = "raised at module level, outside a function"
    NESTED = "raised in a nested function or class"
    NOT_A_RAISE = (
        "not a raise or assert statement (a check call, a raising helper or an error response)"
    )
    IN_BLOCK = "raised inside a loop, try, with or match block"
    NO_GUARD = "no condition guards the raise"
    GUARD_SHAPE = "the guard is not a comparison, membership, None or truth test of values"
    COMPUTED = "the guard reads a local computed in the function, or another object"
    TOO_MANY = "the guard reads more values than the search chooses at once"
    UNSOLVED = "no candidate values make the guard true, or false again"
    ONE_LINE = "the guard and the raise share one line"
    UNREACHABLE = "the function cannot be called from outside (closure, class method state)"


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """A draft's raise site: where it is, what it raises, and in which release."""

    record_id: str
    error_class: str
    package: str
    version: str
    module: str  # dotted import name of the file
    line: int
    function: str | None


@dataclass(frozen=True, slots=True)
class Generated:
    """A generated reproducer: its script and the two calls it makes."""

    record_id: str
    package: str
    version: str
    module: str
    trigger_call: str
    fix_call: str
    direct_state: bool
    script: str
    devices: tuple[str, ...] = ("cpu",)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A site the generator cannot handle, and why."""

    record_id: str
    reason: Reason


class _Unsupported(Exception):
    def __init__(self, reason: Reason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Subject:
    """A value the guard reads: a parameter (`attr` False) or `self.<name>`, or an attribute
    of either through `path` (`parallel_config.tensor_parallel_size`): the object holding
    it is then made for the script (`_ObjectValue`)."""

    name: str
    attr: bool = False
    path: tuple[str, ...] = ()

    def text(self) -> str:
        root = f"self.{self.name}" if self.attr else self.name
        return ".".join((root, *self.path))

    def root(self) -> "_Subject":
        return _Subject(self.name, self.attr)


@dataclass(slots=True)
class _Function:
    """The function around the raise, its class and the module's constants."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: ast.ClassDef | None
    module: ast.Module
    constants: dict[str, Any]
    module_name: str = ""  # dotted, for the relative imports of the module
    params: dict[str, ast.arg] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)  # parameter -> literal default
    required: list[str] = field(default_factory=list)  # parameters without a default
    positional_only: set[str] = field(default_factory=set)


_NO_VALUE = object()
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_GENERIC_VALUES: tuple[Any, ...] = (
    0,
    1,
    -1,
    0.5,
    -1.0,
    2,
    "",
    "errkb-invalid",
    None,
    True,
    False,
    [],
    [0],
    {},
)
_DATACLASS_DECORATORS = frozenset({"dataclass", "config", "dataclasses.dataclass"})
_MODEL_BASES = frozenset({"BaseModel", "Struct", "msgspec.Struct"})
_ANNOTATION_TYPES: tuple[tuple[frozenset[str], tuple[type, ...]], ...] = (
    (frozenset({"int"}), (int,)),
    (frozenset({"float"}), (float, int)),
    (frozenset({"str", "Literal"}), (str,)),
    (frozenset({"bool"}), (bool,)),
    (frozenset({"list", "List", "Sequence", "tuple", "Tuple"}), (list,)),
    (frozenset({"None", "Optional"}), (type(None),)),
)
# A required argument the guard does not read gets a plain value of its annotation's type.
_PLACEHOLDERS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"Tensor"}), "torch.zeros(2)"),
    (frozenset({"list", "List", "Sequence", "Iterable"}), "[]"),
    (frozenset({"tuple", "Tuple"}), "()"),
    (frozenset({"dict", "Dict", "Mapping"}), "{}"),
    (frozenset({"bool"}), "False"),
    (frozenset({"int"}), "0"),
    (frozenset({"float"}), "0.0"),
    (frozenset({"str"}), "''"),
)
_TYPES: dict[str, type] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "set": set,
    "bytes": bytes,
}
_ON_CONSTRUCTION = frozenset({"__init__", "__post_init__"})
_VALIDATOR_DECORATORS = frozenset({"model_validator", "field_validator"})


def module_name(file_path: str, prefix: str = "") -> str:
    """`vllm/config/cache.py` -> `vllm.config.cache` (a package's `__init__` is the package)."""
    path = file_path.removeprefix(prefix).removesuffix(".py")
    parts = path.split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def generate(
    site: SiteSpec, source: str | None, known_values: Mapping[str, str]
) -> Generated | Skipped:
    """A script for one site, or why there is none.

    `known_values` maps a parameter name to Python source that builds a plain value for it
    (torch's optimizers need `params`), from the upstream's module."""
    try:
        return _generate(site, source, known_values)
    except _Unsupported as unsupported:
        return Skipped(site.record_id, unsupported.reason)


def _generate(site: SiteSpec, source: str | None, known_values: Mapping[str, str]) -> Generated:
    if source is None:
        raise _Unsupported(Reason.NO_SOURCE)
    tree = _parsed(source)
    raise_node, function = _locate(tree, site.line)
    function.module_name = site.module
    conditions, around = _path(function.node.body, raise_node)
    guard = around[-1] if around else None
    assertion = isinstance(raise_node, ast.Assert)
    if isinstance(raise_node, ast.Assert):  # `assert test`: the guard is the test being false
        conditions, guard = [*conditions, (raise_node.test, False)], len(conditions)
        around = [*around, guard]
    unguarded = guard is None  # the raise ends the function: an earlier return is its guard
    if guard is None:
        guard = _last_return(function.node, conditions)
    if guard is None:
        raise _Unsupported(Reason.NO_GUARD)
    shown = conditions[guard][0]
    guard_lines = (shown.lineno, shown.end_lineno or shown.lineno)
    if not assertion and guard_lines[0] <= site.line <= guard_lines[1]:
        raise _Unsupported(Reason.ONE_LINE)
    bindings = _local_bindings(function, raise_node)
    conditions = [(_substituted(test, bindings), truth) for test, truth in conditions]
    guard_test = conditions[guard][0]
    subjects = _subjects(guard_test, function)
    avoided = [
        (_substituted(test, bindings), truth)
        for test, truth in _avoided(subjects, function, raise_node)
    ]
    conditions += avoided
    enclosing = [conditions[index][0] for index in reversed(around) if index != guard]
    enclosing += [test for test, _truth in avoided]
    subjects += _path_subjects(enclosing, subjects, function, raise_node)
    trigger, fix = _solve(conditions, guard, subjects, function)
    call = _call_plan(function, subjects, known_values)
    trigger_call = call.render(trigger)
    fix_call = call.render(fix)
    devices = (
        ("cuda",) if any(_CUDA.search(ast.unparse(test)) for test, _ in conditions) else ("cpu",)
    )
    guarded = _Guard(shown, guard_test, guard_lines, assertion, unguarded)
    script = _script(site, function, call, trigger, fix, guarded, devices)
    return Generated(
        record_id=site.record_id,
        package=site.package,
        version=site.version,
        module=site.module,
        trigger_call=trigger_call,
        fix_call=fix_call,
        direct_state=call.direct_state,
        script=script,
        devices=devices,
    )


@dataclass(frozen=True, slots=True)
class _Guard:
    """The test that decides the raise, as written (`shown`) and with the function's locals
    replaced by what they were computed from (`solved`); `unguarded`: the raise ends the
    function and the test is the last earlier `if ...: return`, false on the way to it."""

    shown: ast.expr
    solved: ast.expr
    lines: tuple[int, int]
    assertion: bool
    unguarded: bool


def _last_return(
    node: ast.FunctionDef | ast.AsyncFunctionDef, conditions: list[tuple[ast.expr, bool]]
) -> int | None:
    """For a raise no `if` guards, the last earlier `if ...: return` on the way to it: the
    trigger keeps it false, the fix makes it true, and the function returns before the raise."""
    returns = {
        id(statement.test)
        for statement in ast.walk(node)
        if isinstance(statement, ast.If) and isinstance(statement.body[-1], ast.Return)
    }
    for index in reversed(range(len(conditions))):
        test, truth = conditions[index]
        if not truth and id(test) in returns:
            return index
    return None


def _path_bodies(
    body: Sequence[ast.stmt], target: ast.stmt
) -> Iterator[tuple[Sequence[ast.stmt], int]]:
    """Each statement list on the way to `target` (the function's body, then the branch of
    each `if` around it), with the index of the statement that holds the target: the
    statements before it run on the way, whatever the values."""
    for index, statement in enumerate(body):
        if statement is target:
            yield body, index
            return
        if any(node is target for node in ast.walk(statement)):
            yield body, index
            for branch in _branches(statement):
                if any(node is target for part in branch for node in ast.walk(part)):
                    yield from _path_bodies(branch, target)
            return


def _branches(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists of a statement a path may go through: an `if`'s two branches,
    the body of a `with` or of a `try`."""
    if isinstance(statement, ast.If):
        return [statement.body, statement.orelse]
    if isinstance(statement, ast.With | ast.AsyncWith | ast.Try):
        return [statement.body]
    return []


def _local_bindings(function: _Function, target: ast.stmt) -> dict[str, ast.expr]:
    """Locals bound once before the raise, by a plain assignment on the way to it
    (`tensor_parallel_size = parallel_config.tensor_parallel_size`): a test that reads one
    reads what it was computed from."""
    counts = Counter(text for text in _bound_before(function.node, target) if "." not in text)
    bindings: dict[str, ast.expr] = {}
    for body, index in _path_bodies(function.node.body, target):
        for statement in body[:index]:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                bindings[statement.targets[0].id] = statement.value
            elif (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.value is not None
            ):
                bindings[statement.target.id] = statement.value
    return {
        name: value
        for name, value in bindings.items()
        if counts[name] == 1 and name not in function.params
    }


def _substituted(test: ast.expr, bindings: Mapping[str, ast.expr], depth: int = 4) -> ast.expr:
    """`test` with each local of `bindings` replaced by its value, `depth` times over."""
    if depth == 0 or not bindings:
        return test

    class Replace(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            if node.id in bindings and isinstance(node.ctx, ast.Load):
                return _substituted(copy.deepcopy(bindings[node.id]), bindings, depth - 1)
            return node

    if not any(isinstance(n, ast.Name) and n.id in bindings for n in ast.walk(test)):
        return test
    return Replace().visit(copy.deepcopy(test))


@functools.lru_cache(maxsize=8)
def _parsed(source: str) -> ast.Module:
    """A file's tree, parsed once for all its sites (drafts come in file order; the trees
    are only read)."""
    return ast.parse(source)


def _locate(tree: ast.Module, line: int) -> tuple[ast.Raise | ast.Assert, _Function]:
    """The raise (or assert) statement on `line` and the function (and class) it is in."""
    chain: list[ast.AST] = []

    def walk(node: ast.AST, parents: list[ast.AST]) -> bool:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt | ast.expr | ast.excepthandler):
                continue
            if child.lineno <= line <= (child.end_lineno or child.lineno):
                if isinstance(child, ast.stmt) and child.lineno == line and not chain:
                    chain.extend([*parents, child])
                    return True
                if walk(child, [*parents, child]):
                    return True
        return False

    walk(tree, [])
    if not chain:
        raise _Unsupported(Reason.NOT_A_RAISE)
    statement = chain[-1]
    if not (isinstance(statement, ast.Raise) and statement.exc is not None) and not isinstance(
        statement, ast.Assert
    ):
        raise _Unsupported(Reason.NOT_A_RAISE)
    scopes = [
        n for n in chain if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    if not scopes or not isinstance(scopes[-1], ast.FunctionDef | ast.AsyncFunctionDef):
        raise _Unsupported(Reason.MODULE_LEVEL)
    if len(scopes) > 2 or (len(scopes) == 2 and not isinstance(scopes[0], ast.ClassDef)):
        raise _Unsupported(Reason.NESTED)
    node = scopes[-1]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    if isinstance(node, ast.AsyncFunctionDef):
        raise _Unsupported(Reason.UNREACHABLE)
    cls = scopes[0] if len(scopes) == 2 else None
    assert cls is None or isinstance(cls, ast.ClassDef)
    function = _Function(node, cls, tree, _module_constants(tree))
    _read_parameters(function)
    return statement, function


def _module_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound once to a literal (`_VALID = ("a", "b")`)."""
    found: dict[str, Any] = {}
    bound: dict[str, int] = {}
    for statement in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign):
            targets, value = [statement.target], statement.value
        for target in targets:
            if isinstance(target, ast.Name):
                bound[target.id] = bound.get(target.id, 0) + 1
                literal = _literal(value) if value is not None else _NO_VALUE
                if literal is not _NO_VALUE:
                    found[target.id] = literal
    return {name: value for name, value in found.items() if bound[name] == 1}


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE


def _read_parameters(function: _Function) -> None:
    args = function.node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    for index, (arg, default) in enumerate(pairs):
        if index == 0 and function.cls is not None and not _is_static(function.node):
            continue  # self or cls
        function.params[arg.arg] = arg
        if default is None:
            function.required.append(arg.arg)
        else:
            literal = _literal(default)
            if literal is not _NO_VALUE:
                function.defaults[arg.arg] = literal
    function.positional_only = {arg.arg for arg in args.posonlyargs}


def _decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(ast.unparse(target))
    return names


def _is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return "staticmethod" in _decorator_names(node)


def _path(
    body: Sequence[ast.stmt], target: ast.stmt
) -> tuple[list[tuple[ast.expr, bool]], list[int]]:
    """The conditions (test, must be true) on the way to `target`, and the indexes of the
    `if`s around it, outermost first (the last is the guard); raises when a loop or block is
    in the way."""
    found = _conditions(body, target)
    if found is None:
        raise _Unsupported(Reason.NOT_A_RAISE)
    around = [index for index, (_test, _truth, own) in enumerate(found) if own]
    return [(test, truth) for test, truth, _own in found], around


def _conditions(
    body: Sequence[ast.stmt], target: ast.stmt
) -> list[tuple[ast.expr, bool, bool]] | None:
    """(test, truth, around the target) for each condition before `target` in `body`."""
    conditions: list[tuple[ast.expr, bool, bool]] = []
    for statement in body:
        if statement is target:
            return conditions
        if isinstance(statement, ast.If):
            for branch, truth in ((statement.body, True), (statement.orelse, False)):
                inner = _conditions(branch, target)
                if inner is not None:
                    return [*conditions, (statement.test, truth, True), *inner]
            if not statement.orelse and isinstance(statement.body[-1], _EXITS):
                conditions.append((statement.test, False, False))
        elif any(node is target for node in ast.walk(statement)):
            if isinstance(statement, ast.With | ast.AsyncWith) or (
                isinstance(statement, ast.Try) and _propagates(statement, target)
            ):
                inner = _conditions(statement.body, target)
                if inner is not None:
                    return [*conditions, *inner]
            if isinstance(statement, _BLOCKS):
                raise _Unsupported(Reason.IN_BLOCK)
            raise _Unsupported(Reason.NESTED)
    return None


_BROAD_HANDLERS = frozenset({"Exception", "BaseException"})


def _propagates(statement: ast.Try, target: ast.stmt) -> bool:
    """Whether an error raised by `target` in the body of this `try` leaves it: no handler
    is bare, catches everything or names the raised class."""
    raised = "AssertionError"
    if isinstance(target, ast.Raise) and target.exc is not None:
        made = target.exc.func if isinstance(target.exc, ast.Call) else target.exc
        raised = ast.unparse(made).rsplit(".", 1)[-1]
    for handler in statement.handlers:
        if handler.type is None:
            return False
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        names = {ast.unparse(kind).rsplit(".", 1)[-1] for kind in kinds}
        if names & (_BROAD_HANDLERS | {raised}):
            return False
    return True


def _subjects(guard: ast.expr, function: _Function) -> list[_Subject]:
    """What the guard's own test reads, checked to be parameters, `self.x`, attributes of
    either, or constants.

    Other conditions on the way that read something else are left to the real code (they
    must hold for it to get here, and the run shows whether they do)."""
    subjects = _reads(guard, function)
    if subjects is None:
        raise _Unsupported(Reason.COMPUTED)
    if not subjects:
        raise _Unsupported(Reason.GUARD_SHAPE)
    roots = {s.root() for s in subjects if s.path}
    if any(not s.path and s in roots for s in subjects):
        raise _Unsupported(Reason.COMPUTED)  # an object and one of its attributes at once
    if len(subjects) > MAX_SUBJECTS:
        raise _Unsupported(Reason.TOO_MANY)
    return subjects


def _path_subjects(
    enclosing: list[ast.expr],
    chosen: list[_Subject],
    function: _Function,
    target: ast.stmt,
) -> list[_Subject]:
    """What the tests of the `if`s around the guard read (innermost first), where they read
    only parameters and `self.x` the function does not rebind (`if fused:` around
    `if differentiable:`), within the search's limit: the search chooses those values too.
    Earlier `if ...: raise` checks are left to the defaults."""
    bound = _bound_before(function.node, target)
    more: list[_Subject] = []
    taken = {s.root() for s in chosen if s.path}
    for test in enclosing:
        for subject in _reads(test, function) or []:
            if subject in chosen or subject in more or _rebound(subject, bound):
                continue
            if (subject.path and subject.root() in chosen) or (
                not subject.path and subject in taken
            ):
                continue
            if len(chosen) + len(more) < MAX_SUBJECTS:
                more.append(subject)
    return more


def _chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """`a.b.c` as ("a", ["b", "c"]); None for anything but a name and its attributes."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.insert(0, node.attr)
        node = node.value
    return (node.id, attributes) if isinstance(node, ast.Name) else None


def _reads(test: ast.expr, function: _Function) -> list[_Subject] | None:
    """The subjects a test reads, in order; None when it reads anything else."""
    found: list[_Subject] = []
    method = function.cls is not None and not _is_static(function.node)
    first = function.node.args.args[0].arg if method and function.node.args.args else None
    ok = True

    def visit(node: ast.expr) -> None:
        nonlocal ok
        subject: _Subject | None = None
        if isinstance(node, ast.Name | ast.Attribute):
            chain = _chain(node)
            subject = _subject_of(chain, function, first) if chain else None
            if chain and subject is None and not chain[1] and chain[0] in _KNOWN_NAMES:
                return
            if chain and subject is None and not chain[1] and chain[0] in function.constants:
                return
            if subject is None:
                ok = False
                return
        elif isinstance(node, ast.Call):
            if _is_len(node) or _is_isinstance(node):
                visit(node.args[0])
            elif _is_method(node):
                assert isinstance(node.func, ast.Attribute)
                visit(node.func.value)
                if any(_literal(arg) is _NO_VALUE for arg in node.args):
                    ok = False
            else:
                ok = False
            return
        elif isinstance(node, ast.Subscript):
            visit(node.value)
            if _literal(node.slice) is _NO_VALUE:
                ok = False
            return
        elif isinstance(node, ast.Constant):
            return
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            if _literal(node) is _NO_VALUE:
                ok = False
            return
        elif isinstance(node, ast.Compare | ast.BoolOp | ast.UnaryOp | ast.BinOp):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    visit(child)
            return
        else:
            ok = False
            return
        if subject not in found:
            found.append(subject)

    visit(test)
    return found if ok else None


_KNOWN_NAMES = frozenset({"None", "True", "False", "len"})
# Methods of plain values (str, dict, list) a guard may call on what it reads, with literal
# arguments: the search evaluates them on its candidate values.
_PLAIN_METHODS = frozenset(
    {
        "split",
        "rsplit",
        "startswith",
        "endswith",
        "replace",
        "strip",
        "lstrip",
        "rstrip",
        "lower",
        "upper",
        "get",
        "count",
    }
)
_PLAIN_TYPES = (str, dict, list, tuple)


def _subject_of(
    chain: tuple[str, list[str]], function: _Function, first: str | None
) -> _Subject | None:
    """The subject a name or attribute chain is: a parameter (an attribute of one when it
    is not annotated as a tensor, which no stand-in can be), `self.x`, or neither."""
    root, attributes = chain
    if first is not None and root == first and attributes:
        return _Subject(attributes[0], True, tuple(attributes[1:]))
    if root in function.params and root != first:
        annotation = function.params[root].annotation
        if attributes and annotation is not None and "Tensor" in ast.unparse(annotation):
            return None
        return _Subject(root, False, tuple(attributes))
    return None


def _is_method(node: ast.Call) -> bool:
    """`value.split(".")`: a plain value's method, called with positional arguments."""
    return (
        isinstance(node.func, ast.Attribute)
        and node.func.attr in _PLAIN_METHODS
        and not node.keywords
    )


def _is_len(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1


def _is_isinstance(node: ast.Call) -> bool:
    """`isinstance(x, int)` or `isinstance(x, (int, float))`: builtin types only."""
    if not (
        isinstance(node.func, ast.Name) and node.func.id == "isinstance" and len(node.args) == 2
    ):
        return False
    kinds = node.args[1]
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return all(isinstance(name, ast.Name) and name.id in _TYPES for name in names)


def _bound_texts(statement: ast.stmt) -> list[str]:
    """What a statement binds, as dotted text: `x`, `self.a.b` (an item of `self.a` set
    through `self.a[k] = ...` counts as `self.a`)."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif (
        isinstance(statement, ast.AugAssign | ast.AnnAssign) and statement.value is not None
    ) or isinstance(statement, ast.For | ast.AsyncFor):
        targets = [statement.target]
    elif isinstance(statement, ast.With | ast.AsyncWith):
        targets = [item.optional_vars for item in statement.items if item.optional_vars]
    texts: list[str] = []
    while targets:
        bound = targets.pop()
        if isinstance(bound, ast.Tuple | ast.List):
            targets.extend(bound.elts)
            continue
        while isinstance(bound, ast.Subscript | ast.Starred):
            bound = bound.value
        chain = _chain(bound)
        if chain is not None:
            texts.append(".".join((chain[0], *chain[1])))
    return texts


def _bound_before(node: ast.FunctionDef | ast.AsyncFunctionDef, target: ast.stmt) -> set[str]:
    """Names and attribute chains (`self.x.y`) bound in the function before the raise."""
    texts: set[str] = set()
    for statement in ast.walk(node):
        if isinstance(statement, ast.stmt) and statement.lineno < target.lineno:
            texts.update(_bound_texts(statement))
    for walrus in ast.walk(node):
        if isinstance(walrus, ast.NamedExpr) and walrus.lineno < target.lineno:
            texts.add(walrus.target.id)
    return texts


def _rebound(subject: _Subject, bound: set[str]) -> bool:
    """Whether the function binds the subject, an object holding it or a part of it."""
    text = subject.text()
    return any(
        text == other or text.startswith(other + ".") or other.startswith(text + ".")
        for other in bound
    )


def _avoided(
    subjects: list[_Subject], function: _Function, target: ast.stmt
) -> list[tuple[ast.expr, bool]]:
    """Conditions that keep the function from rebinding what the guard reads before it: a
    subject bound inside an `if` (`if x is None: x = default`) stays the caller's value
    when that `if` is not taken, so its test gets the other truth. A subject bound
    unconditionally, or in a loop or block, is computed: no script."""
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(function.node):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    found: list[tuple[ast.expr, bool]] = []
    for statement in ast.walk(function.node):
        if not isinstance(statement, ast.stmt) or statement.lineno >= target.lineno:
            continue
        texts = _bound_texts(statement)
        if not any(_rebound(subject, set(texts)) for subject in subjects):
            continue
        up = parents.get(id(statement))
        if not isinstance(up, ast.If) or any(node is target for node in ast.walk(up)):
            raise _Unsupported(Reason.COMPUTED)
        outer = parents.get(id(up))
        while isinstance(outer, ast.If):
            outer = parents.get(id(outer))
        if outer is not function.node:
            raise _Unsupported(Reason.COMPUTED)
        condition = (up.test, not any(part is statement for part in up.body))
        if condition not in found:
            found.append(condition)
    for walrus in ast.walk(function.node):
        if (
            isinstance(walrus, ast.NamedExpr)
            and walrus.lineno < target.lineno
            and any(_rebound(subject, {walrus.target.id}) for subject in subjects)
        ):
            raise _Unsupported(Reason.COMPUTED)
    return found


class _Evaluation(Exception):
    """A guard cannot be judged for these values (a type error, or an unknown shape)."""


def _evaluate(node: ast.expr, values: Mapping[_Subject, Any], constants: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        chain = _chain(node)
        if chain is None:
            raise _Evaluation(type(node).__name__)
        root, attributes = chain
        for subject in (
            _Subject(root, False, tuple(attributes)),
            *([_Subject(attributes[0], True, tuple(attributes[1:]))] if attributes else []),
        ):
            if subject in values:
                return values[subject]
        if not attributes and root in constants:
            return constants[root]
        raise _Evaluation(root)
    if isinstance(node, ast.Subscript):
        index = _literal(node.slice)
        if index is _NO_VALUE:
            raise _Evaluation("subscript")
        return _evaluate(node.value, values, constants)[index]
    if isinstance(node, ast.Call) and _is_method(node):
        assert isinstance(node.func, ast.Attribute)
        owner = _evaluate(node.func.value, values, constants)
        if not isinstance(owner, _PLAIN_TYPES):
            raise TypeError(f"{type(owner).__name__} is not a plain value")
        arguments = [_literal(argument) for argument in node.args]
        if _NO_VALUE in arguments:
            raise _Evaluation("arguments")
        return getattr(owner, node.func.attr)(*arguments)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        literal = _literal(node)
        if literal is _NO_VALUE:
            raise _Evaluation("collection")
        return literal
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, values, constants)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        raise _Evaluation("unary")
    if isinstance(node, ast.BoolOp):
        results = (_evaluate(value, values, constants) for value in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left = _evaluate(node.left, values, constants)
        right = _evaluate(node.right, values, constants)
        return _ARITHMETIC[type(node.op)](left, right)
    if isinstance(node, ast.Call) and _is_len(node):
        return len(_evaluate(node.args[0], values, constants))
    if isinstance(node, ast.Call) and _is_isinstance(node):
        kinds = node.args[1]
        names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
        value = _evaluate(node.args[0], values, constants)
        return isinstance(value, tuple(_TYPES[ast.unparse(name)] for name in names))
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, values, constants)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(comparator, values, constants)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise _Evaluation(type(node).__name__)


def _holds(
    conditions: Sequence[tuple[ast.expr, bool]],
    values: Mapping[_Subject, Any],
    constants: Mapping[str, Any],
) -> bool | None:
    """Whether every condition has its truth for these values; None when one cannot be
    judged here (it reads what the search does not choose: the real code decides)."""
    judged = True
    for test, truth in conditions:
        try:
            if bool(_evaluate(test, values, constants)) != truth:
                return False
        except _Evaluation:
            judged = False
        except (
            TypeError,
            ValueError,
            ZeroDivisionError,
            OverflowError,
            AttributeError,
            LookupError,
        ):
            return False
    return True if judged else None


def _candidates(subject: _Subject, tests: Sequence[ast.expr], function: _Function) -> list[Any]:
    """Values to try for one subject: its default, the guard's literals and their
    neighbours, then plain values; only of the types its annotation allows, when it has one."""
    literals: list[Any] = []
    for test in tests:
        for node in ast.walk(test):
            value = _NO_VALUE
            if isinstance(node, ast.Constant | ast.Tuple | ast.List | ast.Set | ast.UnaryOp):
                value = _literal(node)
            elif isinstance(node, ast.Name) and node.id in function.constants:
                value = function.constants[node.id]
            if value is not _NO_VALUE:
                literals.append(value)
    found: list[Any] = []

    def add(value: Any) -> None:
        if not any(type(value) is type(seen) and value == seen for seen in found):
            found.append(value)

    default = function.defaults.get(subject.name, _NO_VALUE)
    if default is not _NO_VALUE:
        add(default)
    for value in literals:
        if isinstance(value, bool) or value is None:
            add(value)
        elif isinstance(value, int | float):
            for near in (value - 1, value + 1, value, value - 0.5, value + 0.5, value * 2):
                add(type(value)(near) if isinstance(value, float) else near)
        elif isinstance(value, str):
            add(value)
            add(f"{value}-errkb")
        elif isinstance(value, tuple | list | set | frozenset | dict):
            members = list(value)
            for member in members[:4]:
                add(member)
            if members and all(isinstance(m, str) for m in members):
                add("errkb-invalid")
            numbers = [m for m in members if isinstance(m, int | float) and not isinstance(m, bool)]
            if numbers:
                add(max(numbers) + 1)
            add(list(range(len(members) + 1)))
    separators = [  # `name.split(".")`: a name whose last part is each literal
        node.args[0].value
        for test in tests
        for node in ast.walk(test)
        if isinstance(node, ast.Call)
        and _is_method(node)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("split", "rsplit")
        and _names(node.func.value, subject)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]
    for separator in separators:
        for value in literals:
            if isinstance(value, str) and value and value not in separators:
                add(f"errkb{separator}{value}")
    for value in _GENERIC_VALUES:
        add(value)
    annotation = _annotation(subject, function)
    optional = bool(re.search(r"\bNone\b|\bOptional\b", annotation or ""))
    made = (
        _runtime_class(function, annotation) if optional and _none_tested(subject, tests) else None
    )
    if made is not None:  # `x: Config | None` tested `is not None`: an instance of Config,
        add(_Made(made))  # after the plain values (the name may be no class)
    checked = any(  # a type check wants values of other types too
        isinstance(node, ast.Call) and _is_isinstance(node) and _names(node.args[0], subject)
        for test in tests
        for node in ast.walk(test)
    )
    allowed = () if checked else _allowed_types(annotation)
    if made is not None:
        allowed = (*allowed, _Made) if allowed else ()
    typed = [value for value in found if isinstance(value, allowed)] if allowed else found
    divided = any(  # a count divided by another (`heads % tp`): whole positive numbers first
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod | ast.FloorDiv | ast.Div)
        and (_names(node.left, subject) or _names(node.right, subject))
        for test in tests
        for node in ast.walk(test)
    )
    ordered = typed or found
    if divided:
        ordered.sort(key=lambda value: not (type(value) is int and value > 0))
    return ordered[:MAX_CANDIDATES]


def _none_tested(subject: _Subject, tests: Sequence[ast.expr]) -> bool:
    """Whether a test compares the subject with None (`x is None`, `x is not None`)."""
    return any(
        isinstance(node, ast.Compare)
        and any(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
        and _names(node.left, subject)
        and any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
        for test in tests
        for node in ast.walk(test)
    )


def _names(node: ast.expr, subject: _Subject) -> bool:
    """Whether `node` is the subject itself (`x`, `self.x`, `x.y`)."""
    chain = _chain(node)
    if chain is None:
        return False
    root, attributes = chain
    if subject.attr:
        return tuple(attributes) == (subject.name, *subject.path)
    return root == subject.name and tuple(attributes) == subject.path


def _annotation(subject: _Subject, function: _Function) -> str | None:
    """The annotation of a parameter, or of a class field for `self.x`, as source (none
    known for an attribute of either)."""
    if subject.path:
        return None
    if not subject.attr:
        arg = function.params.get(subject.name)
        return ast.unparse(arg.annotation) if arg is not None and arg.annotation else None
    for member in function.cls.body if function.cls else []:
        if (
            isinstance(member, ast.AnnAssign)
            and isinstance(member.target, ast.Name)
            and member.target.id == subject.name
        ):
            return ast.unparse(member.annotation)
    return None


def _allowed_types(annotation: str | None) -> tuple[type, ...]:
    """The plain types an annotation admits, read from its words; () when unknown."""
    if not annotation:
        return ()
    words = set(re.findall(r"[A-Za-z_]+", annotation))
    if words & {"Any", "object", "Callable", "TypeVar"}:
        return ()
    allowed: list[type] = []
    for names, kinds in _ANNOTATION_TYPES:
        if words & names:
            allowed.extend(kinds)
    return tuple(allowed)


def _solve(
    conditions: list[tuple[ast.expr, bool]],
    guard: int,
    subjects: list[_Subject],
    function: _Function,
) -> tuple[dict[_Subject, Any], dict[_Subject, Any]]:
    """Trigger values (every condition as on the way to the raise) and fix values (the
    guard's own test false, the rest unchanged), by bounded search in candidate order."""
    test, truth = conditions[guard]
    tests = [test, *(other for other, _truth in conditions if other is not test)]
    choices = [_candidates(subject, tests, function) for subject in subjects]
    fix_conditions = [*conditions[:guard], (test, not truth), *conditions[guard + 1 :]]
    trigger = _search(subjects, choices, conditions, guard, function.constants)
    if trigger is None:
        raise _Unsupported(Reason.UNSOLVED)
    fix = _fix_search(subjects, choices, fix_conditions, guard, function, trigger)
    if fix is None:
        raise _Unsupported(Reason.UNSOLVED)
    return trigger, fix


def _combinations(choices: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
    return itertools.islice(itertools.product(*choices), MAX_COMBINATIONS)


def _search(
    subjects: list[_Subject],
    choices: list[list[Any]],
    conditions: Sequence[tuple[ast.expr, bool]],
    guard: int,
    constants: Mapping[str, Any],
) -> dict[_Subject, Any] | None:
    """The first values for which no condition is false and the guard is judged."""
    for combination in _combinations(choices):
        values = dict(zip(subjects, combination, strict=True))
        if _holds(conditions, values, constants) is not False and _holds(
            conditions[guard : guard + 1], values, constants
        ):
            return values
    return None


def _fix_search(
    subjects: list[_Subject],
    choices: list[list[Any]],
    conditions: Sequence[tuple[ast.expr, bool]],
    guard: int,
    function: _Function,
    trigger: dict[_Subject, Any],
) -> dict[_Subject, Any] | None:
    """The fix changes as few values of the trigger as it can; a subject's default first."""
    for changed in range(1, len(subjects) + 1):
        for chosen in itertools.combinations(range(len(subjects)), changed):
            options = [choices[i] if i in chosen else [trigger[s]] for i, s in enumerate(subjects)]
            found = _search(subjects, options, conditions, guard, function.constants)
            if found is not None:
                return found
    return None


@dataclass(slots=True)
class _CallPlan:
    """How the script reaches the function with chosen values."""

    cls: str | None
    function: str
    kind: str  # function | constructor | fields | direct | static | property
    extra: dict[str, str] = field(default_factory=dict)  # required parameters, as source
    positional_only: set[str] = field(default_factory=set)
    # The class of each object whose attributes the guard reads (a parameter, or `self.x`),
    # as the module names it at run time; None: a stand-in (types.SimpleNamespace).
    objects: dict[_Subject, str | None] = field(default_factory=dict)

    @property
    def direct_state(self) -> bool:
        return self.kind in ("direct", "property") or bool(self.objects)

    @property
    def stand_ins(self) -> bool:
        return any(cls is None for cls in self.objects.values())

    def render(self, values: Mapping[_Subject, Any]) -> str:
        """The call as one line a reader can type (the script runs the same)."""
        arguments = self._arguments(values, shown=True)
        if self.kind == "function":
            return f"{self.function}({arguments})"
        if self.kind in ("constructor", "fields"):
            return f"{self.cls}({arguments})"
        if self.kind == "static":
            return f"{self.cls}.{self.function}({arguments})"
        state = ", ".join(
            f"{s.text().removeprefix('self.')}={v!r}" for s, v in values.items() if s.attr
        )
        reach = f".{self.function}" if self.kind == "property" else f".{self.function}({arguments})"
        return f"{self.cls} with {state} ({DIRECT_STATE_NOTE}){reach}"

    def _object(self, root: _Subject, values: Mapping[_Subject, Any], shown: bool) -> str:
        """An object holding the chosen values of its attributes (nested ones in stand-ins):
        `bare(module.ParallelConfig, tensor_parallel_size=2)`, or `<ParallelConfig with
        tensor_parallel_size=2>` as shown to a reader."""
        tree: dict[str, Any] = {}
        for subject, value in values.items():
            if subject.root() == root and subject.path:
                node = tree
                for name in subject.path[:-1]:
                    node = node.setdefault(name, {})
                node[subject.path[-1]] = _Leaf(value)

        def build(node: dict[str, Any], cls: str | None) -> str:
            parts = [
                f"{name}={build(child, None) if isinstance(child, dict) else repr(child.value)}"
                for name, child in node.items()
            ]
            if shown:
                return f"<{(cls or 'object').rsplit('.', 1)[-1]} with {', '.join(parts)}>"
            if cls is None:
                return f"types.SimpleNamespace({', '.join(parts)})"
            return f"bare({cls}, {', '.join(parts)})"

        return build(tree, self.objects.get(root))

    def _arguments(self, values: Mapping[_Subject, Any], shown: bool = False) -> str:
        keyword = self.kind == "fields"
        given = {s.name: repr(v) for s, v in values.items() if s.attr == keyword and not s.path}
        for root in self.objects:
            if root.attr == keyword:
                given[root.name] = self._object(root, values, shown)
        merged = {**self.extra, **given}
        positional = [merged.pop(n) for n in list(merged) if n in self.positional_only]
        return ", ".join([*positional, *(f"{n}={v}" for n, v in merged.items())])

    def statements(self, values: Mapping[_Subject, Any]) -> list[str]:
        """The body of the scenario function, reaching the function with `values`."""
        arguments = self._arguments(values)
        if self.kind == "function":
            return [f"return module.{self.function}({arguments})"]
        if self.kind in ("constructor", "fields"):
            return [f"return module.{self.cls}({arguments})"]
        if self.kind == "static":
            return [f"return module.{self.cls}.{self.function}({arguments})"]
        lines = [f"obj = module.{self.cls}.__new__(module.{self.cls})  # {DIRECT_STATE_NOTE}"]
        lines += [
            f"set_state(obj, {s.name!r}, {v!r})" for s, v in values.items() if s.attr and not s.path
        ]
        lines += [
            f"set_state(obj, {root.name!r}, {self._object(root, values, False)})"
            for root in self.objects
            if root.attr
        ]
        if self.kind == "property":
            lines.append(f"return obj.{self.function}")
        else:
            lines.append(f"return obj.{self.function}({arguments})")
        return lines


@dataclass(frozen=True, slots=True)
class _Leaf:
    """A chosen value at the end of an object's attribute path."""

    value: Any


def _call_plan(
    function: _Function, subjects: list[_Subject], known: Mapping[str, str]
) -> _CallPlan:
    node, cls = function.node, function.cls
    if any(  # `x.a` and `x.a.b` at once: `a` would be both a chosen value and an object
        a.root() == b.root() and a.path != b.path and b.path[: len(a.path)] == a.path
        for a in subjects
        for b in subjects
    ):
        raise _Unsupported(Reason.COMPUTED)
    params = {s.name for s in subjects if not s.attr}
    attrs = {s.name for s in subjects if s.attr}
    objects = {
        s.root(): _runtime_class(function, _annotation(s.root(), function))
        for s in subjects
        if s.path
    }
    missing = [name for name in function.required if name not in params]
    extra = {name: known.get(name) or _placeholder(function.params[name]) for name in missing}
    decorators = _decorator_names(node)
    plan = functools.partial(_CallPlan, objects=objects)
    if cls is None:
        return plan(None, node.name, "function", extra, function.positional_only)
    if "classmethod" in decorators and attrs:
        raise _Unsupported(Reason.UNREACHABLE)
    if decorators & {"staticmethod", "classmethod"}:
        return plan(cls.name, node.name, "static", extra, function.positional_only)
    if node.name == "__init__":
        if attrs:
            raise _Unsupported(Reason.COMPUTED)
        return plan(cls.name, node.name, "constructor", extra, function.positional_only)
    wraps = _pydantic(function.module, cls)  # it turns a validator's ValueError into its own
    if attrs & _methods(cls):
        raise _Unsupported(Reason.COMPUTED)  # a property or method, not state to set
    if (
        not params
        and not function.required
        and not wraps
        and not objects
        and _runs_on_construction(cls, node)
    ):
        fields = _fields(cls)
        if fields is not None and attrs <= set(fields) and not any(fields.values()):
            return plan(cls.name, node.name, "fields")
    if "property" in decorators:
        return plan(cls.name, node.name, "property")
    if node.name != "__post_init__" and node.name.startswith("__") and node.name.endswith("__"):
        raise _Unsupported(Reason.UNREACHABLE)
    return plan(cls.name, node.name, "direct", extra, function.positional_only)


def _runtime_class(function: _Function, annotation: str | None) -> str | None:
    """The class an annotation names, as the script reaches it at run time: `module.X` for
    a class the module defines or imports, `importlib.import_module("a.b").X` for one it
    imports only under `if TYPE_CHECKING:` (where `X` is not bound when it runs); None when
    no single class is found (the script then uses a stand-in)."""
    if not annotation:
        return None
    bound: dict[str, str] = {}
    for statement in function.module.body:
        if isinstance(statement, ast.ClassDef):
            bound[statement.name] = f"module.{statement.name}"
        elif isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                bound[alias.asname or alias.name] = f"module.{alias.asname or alias.name}"
        elif isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            for node in statement.body:
                if isinstance(node, ast.ImportFrom):
                    source = _absolute(node, function.module_name)
                    for alias in node.names:
                        bound[alias.asname or alias.name] = (
                            f"importlib.import_module({source!r}).{alias.name}"
                        )
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", annotation) if w[:1].isupper()]
    found = [bound[word] for word in words if word in bound and word not in {"Optional", "Union"}]
    return found[0] if len(found) == 1 else None


def _absolute(node: ast.ImportFrom, module: str) -> str:
    """The module a `from ... import` names, a relative one read from the importing module's
    package."""
    if not node.level:
        return node.module or ""
    package = module.split(".")[: -node.level] if node.level else []
    return ".".join([*package, *([node.module] if node.module else [])])


@dataclass(frozen=True, slots=True)
class _Made:
    """A candidate value: an instance of the annotated class made without its __init__ (an
    `if x is not None:` around the guard wants one)."""

    expression: str

    def __repr__(self) -> str:
        return f"bare({self.expression})"


def _placeholder(arg: ast.arg) -> str:
    """A plain value for a required argument the guard does not read, from its annotation
    (None when it has none, or names no plain type): the trigger must reach the raise with
    it, and the run shows whether it does."""
    words = set(re.findall(r"[A-Za-z_]+", ast.unparse(arg.annotation))) if arg.annotation else set()
    for names, value in _PLACEHOLDERS:
        if words & names:
            return value
    return "None"


def _methods(cls: ast.ClassDef) -> set[str]:
    """Names the class defines as functions (properties included)."""
    return {m.name for m in cls.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}


def _pydantic(module: ast.Module, cls: ast.ClassDef) -> bool:
    """Whether the class is a pydantic model or dataclass: its constructor reports an error
    raised in a validator as pydantic's ValidationError, not as the error the site raises."""
    imports = any(
        (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pydantic"))
        or (isinstance(node, ast.Import) and any(a.name == "pydantic" for a in node.names))
        for node in module.body
    )
    bases = {ast.unparse(base) for base in cls.bases}
    decorators = _decorator_names(cls)
    return "config" in decorators or (  # vLLM's @config makes a pydantic dataclass
        imports
        and bool(decorators & _DATACLASS_DECORATORS or bases & {"BaseModel", "pydantic.BaseModel"})
    )


def _runs_on_construction(cls: ast.ClassDef, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether constructing the class runs this method: it is __post_init__, a validator,
    or called as `self.<name>()` by a statement of __init__'s or __post_init__'s own body
    (one inside an `if` runs only when its condition holds: `_verify_greedy_sampling` only
    for a greedy temperature, so the constructor's defaults never reach it)."""
    if node.name in _ON_CONSTRUCTION or _decorator_names(node) & _VALIDATOR_DECORATORS:
        return True
    for member in cls.body:
        if isinstance(member, ast.FunctionDef) and member.name in _ON_CONSTRUCTION:
            calls = [s.value for s in member.body if isinstance(s, ast.Expr)]
            for call in calls:
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == node.name
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self"
                ):
                    return True
    return False


def _fields(cls: ast.ClassDef) -> dict[str, bool] | None:
    """Field -> whether it is required, for a dataclass-like class; None for another class."""
    bases = {ast.unparse(base) for base in cls.bases}
    if not (_decorator_names(cls) & _DATACLASS_DECORATORS or bases & _MODEL_BASES):
        return None
    fields: dict[str, bool] = {}
    for member in cls.body:
        if isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
            if "ClassVar" in ast.unparse(member.annotation) or "InitVar" in ast.unparse(
                member.annotation
            ):
                continue
            fields[member.target.id] = member.value is None
    return fields


def _script(
    site: SiteSpec,
    function: _Function,
    call: _CallPlan,
    trigger: Mapping[_Subject, Any],
    fix: Mapping[_Subject, Any],
    guard: _Guard,
    devices: tuple[str, ...],
) -> str:
    qualname = f"{function.cls.name}.{function.node.name}" if function.cls else function.node.name
    classes = (function.cls.name,) if function.cls else (function.node.name,)
    how = DIRECT_STATE_NOTE if call.direct_state else "through the public call"
    trigger_body = "\n".join(f"    {line}" for line in call.statements(trigger))
    fix_body = "\n".join(f"    {line}" for line in call.statements(fix))

    def text(node: ast.expr) -> str:
        return ast.unparse(node).replace('"""', "'''").replace("\\", "\\\\")

    bodies = trigger_body + fix_body
    imports = "import importlib\nimport sys\n" if "importlib." in bodies else "import sys\n"
    if "types.SimpleNamespace" in bodies:
        imports += "import types\n"
    if any("torch." in value for value in call.extra.values()):
        imports += "\nimport torch\n"
    kit_names = ["GuardedSite", "Target", "fix_scenario", "main", "trigger_scenario"]
    if "set_state(" in bodies:
        kit_names.append("set_state")
    if "bare(" in bodies:
        kit_names.insert(0, "bare")
    statement = "assert" if guard.assertion else "raise"
    release = f"{site.package} {site.version}"
    if guard.unguarded:
        decided = (
            f"ends the function; the last return before it is under `if {text(guard.shown)}`.\n"
            "The trigger keeps that test false, so the raise runs; the fix makes it true, so\n"
            "the function returns before the raise."
        )
    else:
        shown = f"not {text(guard.shown)}" if guard.assertion else text(guard.shown)
        decided = (
            f"is guarded by `{shown}`.\n"
            "The trigger makes the guard true; the fix makes it false, the rest the same."
        )
    if ast.dump(guard.solved) != ast.dump(guard.shown):
        decided += f"\nThe test reads locals computed from `{text(guard.solved)}`."
    objects = ""
    if call.objects:
        objects = (
            "\nThe objects the test reads are made without their __init__, only the attributes it"
            " reads set"
            + (
                "; a stand-in (types.SimpleNamespace) carries only those."
                if call.stand_ins
                else "."
            )
        )
    gpu = (
        "\nCUDA-only: a condition on the way to the raise asks for CUDA; the GPU runner runs it."
        if "cpu" not in devices
        else ""
    )
    return f'''"""Generated reproducer for record {site.record_id} ({site.error_class}).

The {statement} in {qualname} ({site.module}, line {site.line}) of {release}
{decided}
Generated by errkb from the release's source, {how}.{objects}{gpu}
"""

{imports}
from app.reproducers.kit import {", ".join(kit_names)}

RECORD_ID = {site.record_id!r}
TARGET = Target(
    package={site.package!r},
    version={site.version!r},
    module={site.module!r},
    classes={classes!r},
    package_inits=True,
)
DEVICES = {devices!r}
SITE = GuardedSite(
    function={function.node.name!r},
    raise_line={site.line},
    guard_lines={guard.lines!r},
    assertion={guard.assertion!r},
)
TRIGGER_CALL = {call.render(trigger)!r}
FIX_CALL = {call.render(fix)!r}


def trigger(module, _device):
{trigger_body}


def fix(module, _device):
{fix_body}


if __name__ == "__main__":
    sys.exit(
        main(
            RECORD_ID,
            TARGET,
            DEVICES,
            trigger_scenario(SITE, trigger),
            fix_scenario(SITE, fix, FIX_CALL),
        )
    )
'''
