"""The conditions on the way to a raise and what they read (AST): the `if` tests around it,
the earlier `if ...: return|raise` that must be false, the locals bound once before it
replaced by what they were computed from, and the conditions that keep the function from
rebinding what the guard reads.

Everything a guard may read is a parameter, an attribute of `self`, an attribute of either,
or a module constant (a `Subject` the search chooses a value for); anything else makes the
site unsupported, with its `Reason`.
"""

import ast
import copy
import functools
import operator
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.reproducers.generation.sites import Reason, Unsupported
from app.reproducers.generation.source import (
    NO_VALUE,
    Function,
    abstract_base,
    attribute_chain,
    class_expression,
    is_static,
    literal_value,
)
from app.reproducers.generation.tensors import ATTRIBUTES, METHODS, TENSOR_CLASSES, dtype_constant

MAX_SUBJECTS = 3  # values the search chooses at once


@dataclass(frozen=True, slots=True)
class Subject:
    """A value the guard reads: a parameter (`attr` False) or `self.<name>`, or an attribute
    of either through `path` (`parallel_config.tensor_parallel_size`): the object holding
    it is then made for the script (`_ObjectValue`)."""

    name: str
    attr: bool = False
    path: tuple[str, ...] = ()

    def text(self) -> str:
        root = f"self.{self.name}" if self.attr else self.name
        return ".".join((root, *self.path))

    def root(self) -> "Subject":
        return Subject(self.name, self.attr)


_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match)
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
BUILTIN_TYPES: dict[str, type] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "list": list,
    "tuple": tuple,
    "dict": dict,
    "set": set,
    "bytes": bytes,
    "complex": complex,
    "frozenset": frozenset,
    "slice": slice,
}
# What an `isinstance` test names torch's dtype class by: a candidate Dtype is an instance.
DTYPE_CLASSES = frozenset({"torch.dtype"})


@dataclass(frozen=True, slots=True)
class Guard:
    """The test that decides the raise, as written (`shown`) and with the function's locals
    replaced by what they were computed from (`solved`); `unguarded`: the raise ends the
    function and the test is the last earlier `if ...: return`, false on the way to it."""

    shown: ast.expr
    solved: ast.expr
    lines: tuple[int, int]
    assertion: bool
    unguarded: bool
    check: str | None = None  # the check function a check call calls (`torch._check`)


def last_return(
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
    if isinstance(statement, ast.With | ast.AsyncWith | ast.Try | ast.For | ast.AsyncFor):
        return [statement.body]
    return []


def local_bindings(function: Function, target: ast.stmt) -> dict[str, ast.expr]:
    """Locals bound once before the raise, by a plain assignment on the way to it
    (`tensor_parallel_size = parallel_config.tensor_parallel_size`): a test that reads one
    reads what it was computed from."""
    counts = Counter(text for text in _bound_before(function.node, target) if "." not in text)
    bindings: dict[str, ast.expr] = {}
    for body, index in _path_bodies(function.node.body, target):
        holder = body[index]
        if isinstance(holder, ast.For | ast.AsyncFor) and (loop := first_pass(holder)):
            bindings.update(loop.bindings)
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


def substituted(test: ast.expr, bindings: Mapping[str, ast.expr], depth: int = 4) -> ast.expr:
    """`test` with each local of `bindings` replaced by its value, `depth` times over."""
    if depth == 0 or not bindings:
        return test

    class Replace(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            if node.id in bindings and isinstance(node.ctx, ast.Load):
                return substituted(copy.deepcopy(bindings[node.id]), bindings, depth - 1)
            return node

    if not any(isinstance(n, ast.Name) and n.id in bindings for n in ast.walk(test)):
        return test
    return Replace().visit(copy.deepcopy(test))


def inlined(test: ast.expr, function: Function) -> ast.expr:
    """`test` with each call of a one-line helper of the module (`def has_bits(name): return
    name == "LOAD_GLOBAL"`) replaced by the expression it returns, its parameters bound to
    the call's arguments: the search can judge that (the call it cannot)."""
    helpers = _one_line_helpers(function.module)
    if not any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers
        for node in ast.walk(test)
    ):
        return test

    class Replace(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.expr:
            self.generic_visit(node)
            helper = helpers.get(node.func.id) if isinstance(node.func, ast.Name) else None
            if helper is None or node.keywords:
                return node
            params = [arg.arg for arg in helper.args.args]
            if len(node.args) != len(params) or any(
                isinstance(arg, ast.Starred) for arg in node.args
            ):
                return node
            returned = helper.body[-1]
            assert isinstance(returned, ast.Return)
            assert returned.value is not None
            arguments = dict(zip(params, node.args, strict=True))
            made = substituted(copy.deepcopy(returned.value), arguments, 1)
            return ast.copy_location(made, node)

    return Replace().visit(copy.deepcopy(test))


@functools.lru_cache(maxsize=8)
def _one_line_helpers(module: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module's functions whose body is one `return <expression>` (a docstring aside),
    with plain positional parameters; of one defined under `if sys.version_info >= (3, 12):`,
    the definition this interpreter takes (read only: one dict per module, for all its
    sites)."""
    helpers: dict[str, ast.FunctionDef] = {}

    def take(body: list[ast.stmt]) -> None:
        for statement in body:
            if isinstance(statement, ast.If):
                holds = _version_holds(statement.test)
                if holds is not None:
                    take(statement.body if holds else statement.orelse)
                continue
            if not isinstance(statement, ast.FunctionDef) or statement.decorator_list:
                continue
            arguments = statement.args
            parts = statement.body[1:] if ast.get_docstring(statement) else statement.body
            if (
                len(parts) == 1
                and isinstance(parts[0], ast.Return)
                and parts[0].value is not None
                and not (arguments.vararg or arguments.kwarg or arguments.kwonlyargs)
                and not (arguments.defaults or arguments.posonlyargs)
            ):
                helpers[statement.name] = statement
            else:
                helpers.pop(statement.name, None)

    take(module.body)
    return helpers


def _version_holds(test: ast.expr) -> bool | None:
    """`sys.version_info >= (3, 12)` for this interpreter; None for any other test."""
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and ast.unparse(test.left) == "sys.version_info"
        and type(test.ops[0]) in _VERSION_COMPARE
    ):
        return None
    version = literal_value(test.comparators[0])
    if not isinstance(version, tuple) or not all(isinstance(part, int) for part in version):
        return None
    return _VERSION_COMPARE[type(test.ops[0])](sys.version_info, version)


_VERSION_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.GtE: operator.ge,
    ast.Gt: operator.gt,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
}


def path_conditions(
    body: Sequence[ast.stmt], target: ast.stmt
) -> tuple[list[tuple[ast.expr, bool]], list[int]]:
    """The conditions (test, must be true) on the way to `target`, and the indexes of the
    `if`s around it, outermost first (the last is the guard); raises when a loop or block is
    in the way."""
    found = _conditions(body, target)
    if found is None:
        raise Unsupported(Reason.NOT_A_RAISE)
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
        elif isinstance(statement, ast.Assert):  # an earlier check must pass
            conditions.append((statement.test, True, False))
        elif any(node is target for node in ast.walk(statement)):
            if isinstance(statement, ast.With | ast.AsyncWith) or (
                isinstance(statement, ast.Try) and _propagates(statement, target)
            ):
                inner = _conditions(statement.body, target)
                if inner is not None:
                    return [*conditions, *inner]
            if isinstance(statement, ast.For | ast.AsyncFor) and (loop := first_pass(statement)):
                inner = _conditions(statement.body, target)
                if inner is not None:
                    runs = [(test, True, True) for test in loop.runs]
                    return [*conditions, *runs, *inner]
            if isinstance(statement, _BLOCKS):
                raise Unsupported(Reason.IN_BLOCK)
            raise Unsupported(Reason.NESTED)
    return None


@dataclass(frozen=True, slots=True)
class FirstPass:
    """A `for` loop read as its first pass, which reaches the raise: the loop variables bound
    to the first items (`x` to `items[0]`, `i` to 0), and the tests that make it run at all
    (`len(items) > 0`), which the search must make true (they are the loop's own condition)."""

    bindings: dict[str, ast.expr]
    runs: list[ast.expr]


def first_pass(loop: ast.For | ast.AsyncFor) -> FirstPass | None:
    """The first pass of `for x in items`, `for i, x in enumerate(items)`, `for a, b in
    zip(xs, ys)` or `for i in range(n)`, where the items are values the search may choose (a
    name or an attribute chain); None for any other loop."""
    iterated = loop.iter
    wrapper, arguments = None, list[ast.expr]()
    if (
        isinstance(iterated, ast.Call)
        and isinstance(iterated.func, ast.Name)
        and not iterated.keywords
    ):
        wrapper, arguments = iterated.func.id, iterated.args
    if wrapper == "range" and len(arguments) == 1 and isinstance(loop.target, ast.Name):
        count = arguments[0]
        if attribute_chain(count) is None:
            return None
        counted: list[ast.expr] = [
            ast.Compare(left=count, ops=[ast.Gt()], comparators=[ast.Constant(0)])
        ]
        return _placed(FirstPass({loop.target.id: ast.Constant(0)}, counted), loop, [count])
    names: list[str | None] | None
    if wrapper == "enumerate" and len(arguments) == 1:
        sequences, names = [arguments[0]], _target_names(loop.target, 2)
        index, names = (names[0], names[1:]) if names else (None, None)
    elif wrapper == "zip" and arguments:
        sequences, index = arguments, None
        names = _target_names(loop.target, len(arguments))
    else:
        sequences, index = [iterated], None
        names = [loop.target.id] if isinstance(loop.target, ast.Name) else None
    if names is None or any(attribute_chain(sequence) is None for sequence in sequences):
        return None
    bindings: dict[str, ast.expr] = {
        name: ast.Subscript(value=sequence, slice=ast.Constant(0), ctx=ast.Load())
        for name, sequence in zip(names, sequences, strict=True)
        if name is not None
    }
    if index is not None:
        bindings[index] = ast.Constant(0)
    runs: list[ast.expr] = [
        ast.Compare(
            left=ast.Call(func=ast.Name("len", ast.Load()), args=[sequence], keywords=[]),
            ops=[ast.Gt()],
            comparators=[ast.Constant(0)],
        )
        for sequence in sequences
    ]
    return _placed(FirstPass(bindings, runs), loop, sequences)


def _placed(made: FirstPass, loop: ast.For | ast.AsyncFor, kept: list[ast.expr]) -> FirstPass:
    """The made nodes placed on the `for` line, which runs on each pass (the items keep
    their own place)."""
    ids = {id(node) for part in kept for node in ast.walk(part)}
    for part in [*made.bindings.values(), *made.runs]:
        for node in ast.walk(part):
            if isinstance(node, ast.expr) and id(node) not in ids:
                node.lineno, node.end_lineno = loop.lineno, loop.lineno
                node.col_offset, node.end_col_offset = loop.col_offset, loop.col_offset
    return made


def _target_names(target: ast.expr, count: int) -> list[str | None] | None:
    """The names a tuple target binds, `_` as None; None unless it is `count` plain names."""
    if not isinstance(target, ast.Tuple) or len(target.elts) != count:
        return None
    if not all(isinstance(name, ast.Name) for name in target.elts):
        return None
    return [None if name.id == "_" else name.id for name in target.elts]  # type: ignore[attr-defined]


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


def guard_subjects(guard: ast.expr, function: Function) -> list[Subject]:
    """What the guard's own test reads, checked to be parameters, `self.x`, attributes of
    either, or constants.

    Other conditions on the way that read something else are left to the real code (they
    must hold for it to get here, and the run shows whether they do)."""
    subjects = _reads(guard, function)
    if subjects is None:
        raise Unsupported(Reason.COMPUTED)
    if not subjects:
        raise Unsupported(Reason.GUARD_SHAPE)
    roots = {s.root() for s in subjects if s.path}
    if any(not s.path and s in roots for s in subjects):
        raise Unsupported(Reason.COMPUTED)  # an object and one of its attributes at once
    if len(subjects) > MAX_SUBJECTS:
        raise Unsupported(Reason.TOO_MANY)
    return subjects


def path_subjects(
    enclosing: list[ast.expr],
    chosen: list[Subject],
    function: Function,
    target: ast.stmt,
    earlier: Sequence[ast.expr] = (),
) -> list[Subject]:
    """What the tests of the `if`s around the guard read (innermost first), where they read
    only parameters and `self.x` the function does not rebind (`if fused:` around
    `if differentiable:`), within the search's limit: the search chooses those values too.
    Of the earlier checks (`if ...: raise`, `assert`), only the tensor arguments they read
    are chosen (`earlier`): a tensor has no default, the rest are left to theirs."""
    bound = _bound_before(function.node, target)
    more: list[Subject] = []
    taken = {s.root() for s in chosen if s.path}
    tensor_reads = [
        subject
        for test in earlier
        for subject in _reads(test, function) or []
        if not subject.attr and subject.name in function.tensors
    ]
    enclosing_reads = [subject for test in enclosing for subject in _reads(test, function) or []]
    for subject in [*enclosing_reads, *tensor_reads]:
        if subject in chosen or subject in more or _rebound(subject, bound):
            continue
        if (subject.path and subject.root() in chosen) or (not subject.path and subject in taken):
            continue
        if len(chosen) + len(more) < MAX_SUBJECTS:
            more.append(subject)
    return more


def _reads(test: ast.expr, function: Function) -> list[Subject] | None:
    """The subjects a test reads, in order; None when it reads anything else."""
    found: list[Subject] = []
    method = function.cls is not None and not is_static(function.node)
    first = function.node.args.args[0].arg if method and function.node.args.args else None
    ok = True

    def visit(node: ast.expr) -> None:
        nonlocal ok
        subject: Subject | None = None
        if isinstance(node, ast.Name | ast.Attribute):
            if dtype_constant(node) is not None:
                return
            chain = attribute_chain(node)
            subject = _subject_of(chain, function, first) if chain else None
            if chain and subject is None and not chain[1] and chain[0] in _KNOWN_NAMES:
                return
            if chain and subject is None and not chain[1] and chain[0] in function.constants:
                return
            if subject is None:
                ok = False
                return
        elif isinstance(node, ast.Call):
            if (
                is_len(node)
                or is_callable_test(node)
                or class_check(node, function) is not None
                or attribute_test(node, function) is not None
            ):
                visit(node.args[0])
            elif is_tensor_method(node, function):
                assert isinstance(node.func, ast.Attribute)
                visit(node.func.value)
            elif is_method(node):
                assert isinstance(node.func, ast.Attribute)
                visit(node.func.value)
                if any(literal_value(arg) is NO_VALUE for arg in node.args):
                    ok = False
            else:
                ok = False
            return
        elif isinstance(node, ast.Subscript):
            visit(node.value)
            if literal_value(node.slice) is NO_VALUE:
                ok = False
            return
        elif isinstance(node, ast.Constant):
            return
        elif isinstance(node, ast.Tuple | ast.List | ast.Set):
            if collection_value(node) is NO_VALUE:
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


def _subject_of(
    chain: tuple[str, list[str]], function: Function, first: str | None
) -> Subject | None:
    """The subject a name or attribute chain is: a parameter (an attribute of one when it
    is not annotated as a tensor, which no stand-in can be), `self.x`, or neither."""
    root, attributes = chain
    if first is not None and root == first and attributes:
        return Subject(attributes[0], True, tuple(attributes[1:]))
    if root in function.tensors and root != first:
        return Subject(root, False, ()) if not attributes or attributes[0] in ATTRIBUTES else None
    if root in function.params and root != first:
        annotation = function.params[root].annotation
        if attributes and annotation is not None and "Tensor" in ast.unparse(annotation):
            return None
        return Subject(root, False, tuple(attributes))
    return None


def is_tensor_method(node: ast.Call, function: Function) -> bool:
    """`x.dim()`, `x.size(0)`: a method of a tensor argument, with literal arguments."""
    return (
        isinstance(node.func, ast.Attribute)
        and node.func.attr in METHODS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in function.tensors
        and not node.keywords
        and all(literal_value(arg) is not NO_VALUE for arg in node.args)
    )


def is_method(node: ast.Call) -> bool:
    """`value.split(".")`: a plain value's method, called with positional arguments."""
    return (
        isinstance(node.func, ast.Attribute)
        and node.func.attr in _PLAIN_METHODS
        and not node.keywords
    )


def collection_value(node: ast.Tuple | ast.List | ast.Set) -> Any:
    """A collection of literals and dtypes (`(torch.half, torch.bfloat16)`), or NO_VALUE."""
    literal = literal_value(node)
    if literal is not NO_VALUE:
        return literal
    items = [dtype_constant(item) or literal_value(item) for item in node.elts]
    if any(item is NO_VALUE for item in items):
        return NO_VALUE
    kinds: dict[type, Callable[[list[Any]], Any]] = {ast.Tuple: tuple, ast.List: list, ast.Set: set}
    return kinds[type(node)](items)


def _calls_builtin(node: ast.Call, name: str, arguments: int) -> bool:
    """Whether the call is `name(...)` with this many positional arguments and no keyword."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == name
        and len(node.args) == arguments
        and not node.keywords
    )


def is_len(node: ast.Call) -> bool:
    return _calls_builtin(node, "len", 1)


def is_callable_test(node: ast.Call) -> bool:
    """`callable(fn)`."""
    return _calls_builtin(node, "callable", 1)


def attribute_test(node: ast.Call, function: Function) -> str | None:
    """The attribute `hasattr(x, "name")` asks for (a literal or a module constant); None for
    any other call."""
    if not _calls_builtin(node, "hasattr", 2):
        return None
    name = node.args[1]
    value = function.constants.get(name.id) if isinstance(name, ast.Name) else literal_value(name)
    return value if isinstance(value, str) and value.isidentifier() else None


@dataclass(frozen=True, slots=True)
class ClassCheck:
    """The types an `isinstance` test names: builtin ones, and classes as the script reaches
    them (`module.Node`), whose instance a candidate made without __init__ is."""

    builtins: tuple[type, ...]  # builtin types and abstract bases (`Sequence`, `Number`)
    classes: tuple[str, ...]
    tensor: bool = False  # `torch.Tensor` is one of them: a candidate tensor is an instance
    dtype: bool = False  # `torch.dtype` is one of them: a candidate Dtype is an instance

    @property
    def abstract(self) -> bool:
        """Whether an abstract base is among them: an object may be an instance of one
        without naming it (a tensor is Sized)."""
        return any(kind.__module__ != "builtins" for kind in self.builtins)


def class_check(node: ast.Call, function: Function) -> ClassCheck | None:
    """`isinstance(x, int)`, `isinstance(x, (Node, int))`: builtin types, abstract bases a
    plain value is judged against, torch's tensor and dtype classes, and classes the script
    can reach; None for any other call (a type the script cannot name)."""
    if not _calls_builtin(node, "isinstance", 2):
        return None
    kinds = node.args[1]
    builtins: list[type] = []
    classes: list[str] = []
    tensor = dtype = False
    for kind in kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]:
        text = ast.unparse(kind)
        if text in BUILTIN_TYPES:
            builtins.append(BUILTIN_TYPES[text])
        elif text == "type(None)":
            builtins.append(type(None))
        elif (base := abstract_base(function, kind)) is not None:
            builtins.append(base)
        elif text in TENSOR_CLASSES:
            tensor = True
        elif text in DTYPE_CLASSES:
            dtype = True
        elif (reached := class_expression(function, kind)) is not None:
            classes.append(reached)
        else:
            return None
    return ClassCheck(tuple(builtins), tuple(classes), tensor, dtype)


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
        chain = attribute_chain(bound)
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


def _rebound(subject: Subject, bound: set[str]) -> bool:
    """Whether the function binds the subject, an object holding it or a part of it."""
    text = subject.text()
    return any(
        text == other or text.startswith(other + ".") or other.startswith(text + ".")
        for other in bound
    )


def avoided_rebindings(
    subjects: list[Subject], function: Function, target: ast.stmt
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
            raise Unsupported(Reason.COMPUTED)
        outer = parents.get(id(up))
        while isinstance(outer, ast.If):
            outer = parents.get(id(outer))
        if outer is not function.node:
            raise Unsupported(Reason.COMPUTED)
        condition = (up.test, not any(part is statement for part in up.body))
        if condition not in found:
            found.append(condition)
    for walrus in ast.walk(function.node):
        if (
            isinstance(walrus, ast.NamedExpr)
            and walrus.lineno < target.lineno
            and any(_rebound(subject, {walrus.target.id}) for subject in subjects)
        ):
            raise Unsupported(Reason.COMPUTED)
    return found


def annotation_of(subject: Subject, function: Function) -> str | None:
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
