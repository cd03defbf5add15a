"""The function around a raise site, read from the release's source (AST): the raise (or
assert, or check call: `torch._check(cond, lambda: msg)` is read as the `assert cond` it
stands for) statement on the site's line, the function and class it is in, the parameters with
their literal defaults, the module's constants, and the class an annotation names as the
script reaches it at run time.

The tree is only read, never run: the scripts run upstream code, on the real release.
"""

import ast
import collections.abc
import functools
import numbers
import re
from dataclasses import dataclass, field
from typing import Any

from app import upstreams
from app.reproducers.generation.sites import Reason, Unsupported
from app.reproducers.generation.tensors import tensor_parameters

# Check functions (torch._check*): a call of one with a condition raises when it is false.
_CHECKS = frozenset(upstreams.checks())


@dataclass(slots=True)
class Function:
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
    tensors: frozenset[str] = frozenset()  # parameters that are tensors (tensors.py)


NO_VALUE = object()


class CheckCall(ast.Assert):
    """A check function's call (`torch._check(cond, lambda: msg)`) read as `assert cond`: it
    raises exactly when its condition is false, from its own statement's line."""

    callee: str


def _checks_as_asserts(tree: ast.Module) -> ast.Module:
    """The tree with each statement that calls a check function with a condition replaced by
    the assert it stands for, at the same place."""

    class Replace(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr) -> ast.stmt:
            call = node.value
            if not (isinstance(call, ast.Call) and call.args):
                return node
            callee = ast.unparse(call.func)
            if callee not in _CHECKS:
                return node
            check = ast.copy_location(CheckCall(test=call.args[0], msg=None), node)
            check.callee = callee
            return check

    return Replace().visit(tree)


@functools.lru_cache(maxsize=8)
def parsed(source: str) -> ast.Module:
    """A file's tree, its check calls read as asserts, parsed once for all its sites (drafts
    come in file order; the trees are only read)."""
    tree = ast.parse(source)
    return _checks_as_asserts(tree) if any(name in source for name in _CHECKS) else tree


def locate(tree: ast.Module, line: int) -> tuple[ast.Raise | ast.Assert, Function]:
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
        raise Unsupported(Reason.NOT_A_RAISE)
    statement = chain[-1]
    if not (isinstance(statement, ast.Raise) and statement.exc is not None) and not isinstance(
        statement, ast.Assert
    ):
        raise Unsupported(Reason.NOT_A_RAISE)
    scopes = [
        n for n in chain if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    if not scopes or not isinstance(scopes[-1], ast.FunctionDef | ast.AsyncFunctionDef):
        raise Unsupported(Reason.MODULE_LEVEL)
    if len(scopes) > 2 or (len(scopes) == 2 and not isinstance(scopes[0], ast.ClassDef)):
        raise Unsupported(Reason.NESTED)
    node = scopes[-1]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    if isinstance(node, ast.AsyncFunctionDef):
        raise Unsupported(Reason.UNREACHABLE)
    cls = scopes[0] if len(scopes) == 2 else None
    assert cls is None or isinstance(cls, ast.ClassDef)
    function = Function(node, cls, tree, _module_constants(tree))
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
                literal = literal_value(value) if value is not None else NO_VALUE
                if literal is not NO_VALUE:
                    found[target.id] = literal
    return {name: value for name, value in found.items() if bound[name] == 1}


def literal_value(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NO_VALUE


def _read_parameters(function: Function) -> None:
    args = function.node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    pairs += list(zip(args.kwonlyargs, args.kw_defaults, strict=True))
    for index, (arg, default) in enumerate(pairs):
        if index == 0 and function.cls is not None and not is_static(function.node):
            continue  # self or cls
        function.params[arg.arg] = arg
        if default is None:
            function.required.append(arg.arg)
        else:
            literal = literal_value(default)
            if literal is not NO_VALUE:
                function.defaults[arg.arg] = literal
    function.positional_only = {arg.arg for arg in args.posonlyargs}
    function.tensors = tensor_parameters(function.node) & set(function.params)


def decorator_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> set[str]:
    names = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        names.add(ast.unparse(target))
    return names


def is_static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return "staticmethod" in decorator_names(node)


def runtime_class(function: Function, annotation: str | None) -> str | None:
    """The class an annotation names, as the script reaches it at run time: `module.X` for
    a class the module defines or imports, `importlib.import_module("a.b").X` for one it
    imports only under `if TYPE_CHECKING:` (where `X` is not bound when it runs); None when
    no single class is found (the script then uses a stand-in)."""
    if not annotation:
        return None
    bound = _bound_names(function)
    words = [w for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", annotation) if w[:1].isupper()]
    found = [bound[word] for word in words if word in bound and word not in {"Optional", "Union"}]
    return found[0] if len(found) == 1 else None


# Classes a plain value (0, "", [], None) may be an instance of: an isinstance check of one is
# judged on the plain candidates themselves (`[]` is a Sequence, `1` a Number), where the class
# is the real abstract base; `Any` and `Callable` cannot be judged that way.
_ABSTRACT_BASES: dict[str, type | None] = {
    "Any": None,
    "Callable": None,
    "Collection": collections.abc.Collection,
    "Container": collections.abc.Container,
    "Hashable": collections.abc.Hashable,
    "Integral": numbers.Integral,
    "Iterable": collections.abc.Iterable,
    "Iterator": collections.abc.Iterator,
    "Mapping": collections.abc.Mapping,
    "MutableMapping": collections.abc.MutableMapping,
    "MutableSequence": collections.abc.MutableSequence,
    "Number": numbers.Number,
    "Real": numbers.Real,
    "Reversible": collections.abc.Reversible,
    "Sequence": collections.abc.Sequence,
    "Sized": collections.abc.Sized,
}
# The modules an abstract base is imported from, by the names a module may give them.
_ABSTRACT_MODULES = frozenset(
    {"typing", "typing_extensions", "collections", "collections.abc", "numbers"}
)


def attribute_chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """`a.b.c` as ("a", ["b", "c"]); None for anything but a name and its attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return (node.id, parts) if isinstance(node, ast.Name) else None


def abstract_base(function: Function, node: ast.expr) -> type | None:
    """The abstract base an isinstance check names (`Sequence` imported from typing or
    collections.abc, `collections.abc.Sized`, `numbers.Integral` under any alias), or None."""
    dotted = attribute_chain(node)
    if dotted is None:
        return None
    root, parts = dotted
    name = parts[-1] if parts else root
    if _ABSTRACT_BASES.get(name) is None:
        return None
    imported, roots = _abstract_imports(function.module)
    named = root in roots if parts else (root, name) in imported
    return _ABSTRACT_BASES[name] if named else None


@functools.lru_cache(maxsize=8)
def _abstract_imports(
    module: ast.Module,
) -> tuple[frozenset[tuple[str, str]], frozenset[str]]:
    """What a module's top level binds from the modules abstract bases live in: each name
    imported from one, with the name it had there (`from typing import Sequence as Seq`:
    ("Seq", "Sequence")), and every name an attribute may be read through (those, as `from
    collections import abc` binds a module, and `import collections.abc as abcs`). Read once
    per module: an isinstance test is judged on every candidate the search tries."""
    imported: set[tuple[str, str]] = set()
    roots: set[str] = set()
    for statement in module.body:
        if isinstance(statement, ast.ImportFrom) and statement.module in _ABSTRACT_MODULES:
            for alias in statement.names:
                imported.add((alias.asname or alias.name, alias.name))
                roots.add(alias.asname or alias.name)
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name in _ABSTRACT_MODULES:
                    roots.add(alias.asname or alias.name.split(".")[0])
    return frozenset(imported), frozenset(roots)


def class_expression(function: Function, node: ast.expr) -> str | None:
    """A class an isinstance check names, as the script reaches it: one the module defines
    or imports by name (`module.Node`), or a class of a module it imports (`module.torch.fx.
    Node`). None for a name that is not a class by its spelling (`dtype`), an abstract base a
    plain value may belong to (`Sequence`), a `...Like` or `...Type` name (often a tuple of
    types: `IntLike`), or a name the module does not bind."""
    dotted = attribute_chain(node)
    if dotted is None:
        return None
    root, parts = dotted
    name = parts[-1] if parts else root
    if (
        not name[:1].isupper()
        or name in _ABSTRACT_BASES
        or name.endswith(("Like", "Type", "Types"))
    ):
        return None
    reached = _bound_names(function, modules=bool(parts)).get(root)
    return ".".join((reached, *parts)) if reached else None


# Modules whose names are typing constructs (`Any`, `Callable`), not classes to instantiate.
_TYPING_MODULES = frozenset({"typing", "typing_extensions", "collections.abc", "abc"})


def _bound_names(function: Function, modules: bool = False) -> dict[str, str]:
    """Names the module binds at its top level to classes it defines or names it imports
    (`from a import X`, not from typing; with `modules`, `import a.b` too), as the script
    reaches them (read only: one dict per module, shared by its sites' searches)."""
    return _module_bindings(function.module, function.module_name, modules)


@functools.lru_cache(maxsize=8)
def _module_bindings(module: ast.Module, module_name: str, modules: bool) -> dict[str, str]:
    bound: dict[str, str] = {}
    for statement in module.body:
        if isinstance(statement, ast.ClassDef):
            bound[statement.name] = f"module.{statement.name}"
        elif isinstance(statement, ast.ImportFrom) and statement.module not in _TYPING_MODULES:
            for alias in statement.names:
                bound[alias.asname or alias.name] = f"module.{alias.asname or alias.name}"
        elif isinstance(statement, ast.Import) and modules:
            for alias in statement.names:
                name = alias.asname or alias.name.split(".")[0]
                bound[name] = f"module.{name}"
        elif isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            for node in statement.body:
                if isinstance(node, ast.ImportFrom):
                    source = _absolute(node, module_name)
                    for alias in node.names:
                        bound[alias.asname or alias.name] = (
                            f"importlib.import_module({source!r}).{alias.name}"
                        )
    return bound


def _absolute(node: ast.ImportFrom, module: str) -> str:
    """The module a `from ... import` names, a relative one read from the importing module's
    package."""
    if not node.level:
        return node.module or ""
    package = module.split(".")[: -node.level] if node.level else []
    return ".".join([*package, *([node.module] if node.module else [])])
