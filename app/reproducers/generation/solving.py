"""The bounded search for values: candidates for each subject (its default, the guard's
literals and their neighbours, plain values of the types its annotation allows), tried in
order until every condition on the way holds and the guard is true (the trigger), then with
as few of them changed as can make the guard false, the path the same (the fix).

The guard is evaluated here on the candidate values, from its tree: no upstream code runs.
"""

import ast
import itertools
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.reproducers.generation.guards import (
    Subject,
    annotation_of,
    attribute_test,
    class_check,
    collection_value,
    is_callable_test,
    is_len,
    is_method,
    is_tensor_method,
)
from app.reproducers.generation.sites import Reason, Unsupported
from app.reproducers.generation.source import (
    NO_VALUE,
    Function,
    attribute_chain,
    literal_value,
    runtime_class,
)
from app.reproducers.generation.tensors import (
    ANY_DTYPE,
    ANY_TENSOR,
    Dtype,
    TensorValue,
    dtype_constant,
)
from app.reproducers.generation.tensors import candidates as tensor_candidates
from app.reproducers.generation.tensors import read as tensor_read

MAX_CANDIDATES = 24  # values tried per subject
MAX_COMBINATIONS = 20_000  # guard evaluations per site: the search's budget

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
# A value of each builtin type an `isinstance` test may name that the generic values lack,
# tried after them; containers empty, so that a fix that walks its items meets none.
_SAMPLES: dict[type, Any] = {
    tuple: (),
    set: set(),
    frozenset: frozenset(),
    bytes: b"",
    complex: 1j,
    slice: slice(None),
}
_ANNOTATION_TYPES: tuple[tuple[frozenset[str], tuple[type, ...]], ...] = (
    (frozenset({"int"}), (int,)),
    (frozenset({"float"}), (float, int)),
    (frozenset({"str", "Literal"}), (str,)),
    (frozenset({"bool"}), (bool,)),
    (frozenset({"list", "List", "Sequence", "tuple", "Tuple"}), (list,)),
    (frozenset({"None", "Optional"}), (type(None),)),
)
_PLAIN_TYPES = (str, dict, list, tuple)
_OPTIONAL = re.compile(r"\bNone\b|\bOptional\b")  # an annotation that admits None


class _Evaluation(Exception):
    """A guard cannot be judged for these values (a type error, or an unknown shape)."""


def _evaluate(node: ast.expr, values: Mapping[Subject, Any], function: Function) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name | ast.Attribute):
        if (dtype := dtype_constant(node)) is not None:
            return dtype
        chain = attribute_chain(node)
        if chain is None:
            raise _Evaluation(type(node).__name__)
        root, attributes = chain
        for subject in (
            Subject(root, False, tuple(attributes)),
            *([Subject(attributes[0], True, tuple(attributes[1:]))] if attributes else []),
        ):
            if subject in values:
                return values[subject]
        if attributes and isinstance(tensor := values.get(Subject(root, False, ())), TensorValue):
            return tensor_read(tensor, attributes)
        if not attributes and root in function.constants:
            return function.constants[root]
        raise _Evaluation(root)
    if isinstance(node, ast.Subscript):
        index = literal_value(node.slice)
        if index is NO_VALUE:
            raise _Evaluation("subscript")
        return _evaluate(node.value, values, function)[index]
    if isinstance(node, ast.Call) and is_method(node):
        assert isinstance(node.func, ast.Attribute)
        owner = _evaluate(node.func.value, values, function)
        if not isinstance(owner, _PLAIN_TYPES):
            raise TypeError(f"{type(owner).__name__} is not a plain value")
        arguments = [literal_value(argument) for argument in node.args]
        if NO_VALUE in arguments:
            raise _Evaluation("arguments")
        return getattr(owner, node.func.attr)(*arguments)
    if isinstance(node, ast.Call) and is_tensor_method(node, function):
        assert isinstance(node.func, ast.Attribute)
        owner = _evaluate(node.func.value, values, function)
        if not isinstance(owner, TensorValue):
            raise TypeError(f"{type(owner).__name__} is not a tensor")
        return getattr(owner, node.func.attr)(*(literal_value(arg) for arg in node.args))
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        literal = collection_value(node)
        if literal is NO_VALUE:
            raise _Evaluation("collection")
        return literal
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, values, function)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        raise _Evaluation("unary")
    if isinstance(node, ast.BoolOp):
        results = (_evaluate(value, values, function) for value in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left = _evaluate(node.left, values, function)
        right = _evaluate(node.right, values, function)
        return _ARITHMETIC[type(node.op)](left, right)
    if isinstance(node, ast.Call) and is_len(node):
        return len(_evaluate(node.args[0], values, function))
    if isinstance(node, ast.Call) and (name := attribute_test(node, function)) is not None:
        value = _evaluate(node.args[0], values, function)
        if isinstance(value, _Made | TensorValue):
            raise _Evaluation("an object's attributes")
        return value.name == name if isinstance(value, _Carrying) else hasattr(value, name)
    if isinstance(node, ast.Call) and is_callable_test(node):
        value = _evaluate(node.args[0], values, function)
        if isinstance(value, _Made):
            raise _Evaluation("an object's __call__")
        return callable(value)
    if isinstance(node, ast.Call) and (check := class_check(node, function)) is not None:
        value = _evaluate(node.args[0], values, function)
        if isinstance(value, _Made | TensorValue) and check.abstract:
            raise _Evaluation("an object's abstract bases")  # a tensor is Sized, for one
        if isinstance(value, _Made):
            return value.expression in check.classes
        if isinstance(value, TensorValue):
            return check.tensor
        if isinstance(value, Dtype):
            return check.dtype
        return isinstance(value, check.builtins)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, values, function)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(comparator, values, function)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise _Evaluation(type(node).__name__)


def _holds(
    conditions: Sequence[tuple[ast.expr, bool]],
    values: Mapping[Subject, Any],
    function: Function,
) -> bool | None:
    """Whether every condition has its truth for these values; None when one cannot be
    judged here (it reads what the search does not choose: the real code decides)."""
    judged = True
    for test, truth in conditions:
        try:
            if bool(_evaluate(test, values, function)) != truth:
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


def _candidates(subject: Subject, tests: Sequence[ast.expr], function: Function) -> list[Any]:
    """Values to try for one subject: its default, the guard's literals and their
    neighbours, then plain values; only of the types its annotation allows, when it has one.
    A tensor argument gets tensors (tensors.py)."""
    annotation = annotation_of(subject, function)
    optional = bool(_OPTIONAL.search(annotation or ""))
    checks = [  # `isinstance(x, Node)`: an instance of each class the test names
        check
        for test in tests
        for node in ast.walk(test)
        if isinstance(node, ast.Call)
        and (check := class_check(node, function)) is not None
        and _names(node.args[0], subject)
    ]
    if not subject.attr and not subject.path and subject.name in function.tensors:
        optional = (
            optional
            or function.defaults.get(subject.name, NO_VALUE) is None
            or _none_tested(subject, tests)
        )
        return tensor_candidates(tests, optional, bool(checks))[:MAX_CANDIDATES]
    literals: list[Any] = []
    for test in tests:
        for node in ast.walk(test):
            value = NO_VALUE
            if isinstance(node, ast.Constant | ast.Tuple | ast.List | ast.Set | ast.UnaryOp):
                value = literal_value(node)
            elif isinstance(node, ast.Name) and node.id in function.constants:
                value = function.constants[node.id]
            if value is not NO_VALUE:
                literals.append(value)
    found: list[Any] = []

    def add(value: Any) -> None:
        if not any(type(value) is type(seen) and value == seen for seen in found):
            found.append(value)

    default = function.defaults.get(subject.name, NO_VALUE)
    if default is not NO_VALUE:
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
            # a set's order is its members' hashes, which change with each process's string
            # hash seed: sorted, the same members are tried first on every run
            members = sorted(value, key=repr) if isinstance(value, set | frozenset) else list(value)
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
        and is_method(node)
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
    for check in checks:
        for cls in check.classes:
            add(_Made(cls))
        if check.tensor:
            add(ANY_TENSOR)
        if check.dtype:
            add(ANY_DTYPE)
    for test in tests:  # `hasattr(x, "step")`, `callable(x)`: an object that has it, a function
        for node in ast.walk(test):
            if not isinstance(node, ast.Call) or not node.args or not _names(node.args[0], subject):
                continue
            if (name := attribute_test(node, function)) is not None:
                add(_Carrying(name))
            elif is_callable_test(node):
                add(_CALLABLE)
    for value in _GENERIC_VALUES:
        add(value)
    for kind in dict.fromkeys(kind for check in checks for kind in check.builtins):
        if kind in _SAMPLES:
            add(_SAMPLES[kind])
    made = (
        runtime_class(function, annotation) if optional and _none_tested(subject, tests) else None
    )
    if made is not None:  # `x: Config | None` tested `is not None`: an instance of Config,
        add(_Made(made))  # after the plain values (the name may be no class)
    allowed = () if checks else _allowed_types(annotation)  # a type check wants other types
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
    indexed = any(  # `items[0]`, a loop's first item: lists of one candidate each
        isinstance(node, ast.Subscript)
        and _names(node.value, subject)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == 0
        for test in tests
        for node in ast.walk(test)
    )
    if indexed:
        ordered = [[value] for value in found if not isinstance(value, list)] + ordered
    if divided:
        ordered.sort(key=lambda value: not (type(value) is int and value > 0))
    return ordered[:MAX_CANDIDATES]


def _none_tested(subject: Subject, tests: Sequence[ast.expr]) -> bool:
    """Whether a test compares the subject with None (`x is None`, `x is not None`)."""
    return any(
        isinstance(node, ast.Compare)
        and any(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
        and _names(node.left, subject)
        and any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
        for test in tests
        for node in ast.walk(test)
    )


def _names(node: ast.expr, subject: Subject) -> bool:
    """Whether `node` is the subject itself (`x`, `self.x`, `x.y`)."""
    chain = attribute_chain(node)
    if chain is None:
        return False
    root, attributes = chain
    if subject.attr:
        return tuple(attributes) == (subject.name, *subject.path)
    return root == subject.name and tuple(attributes) == subject.path


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


def solve(
    conditions: list[tuple[ast.expr, bool]],
    guard: int,
    subjects: list[Subject],
    function: Function,
) -> tuple[dict[Subject, Any], dict[Subject, Any]]:
    """Trigger values (every condition as on the way to the raise) and fix values (the
    guard's own test false, the rest unchanged), by bounded search in candidate order."""
    test, truth = conditions[guard]
    tests = [test, *(other for other, _truth in conditions if other is not test)]
    choices = [_candidates(subject, tests, function) for subject in subjects]
    fix_conditions = [*conditions[:guard], (test, not truth), *conditions[guard + 1 :]]
    trigger = _search(subjects, choices, conditions, guard, function)
    if trigger is None:
        raise Unsupported(Reason.UNSOLVED)
    fix = _fix_search(subjects, choices, fix_conditions, guard, function, trigger)
    if fix is None:
        raise Unsupported(Reason.UNSOLVED)
    return trigger, fix


def _combinations(choices: list[list[Any]]) -> Iterator[tuple[Any, ...]]:
    return itertools.islice(itertools.product(*choices), MAX_COMBINATIONS)


def _search(
    subjects: list[Subject],
    choices: list[list[Any]],
    conditions: Sequence[tuple[ast.expr, bool]],
    guard: int,
    function: Function,
) -> dict[Subject, Any] | None:
    """The first values for which no condition is false and the guard is judged."""
    for combination in _combinations(choices):
        values = dict(zip(subjects, combination, strict=True))
        if _holds(conditions, values, function) is not False and _holds(
            conditions[guard : guard + 1], values, function
        ):
            return values
    return None


def _fix_search(
    subjects: list[Subject],
    choices: list[list[Any]],
    conditions: Sequence[tuple[ast.expr, bool]],
    guard: int,
    function: Function,
    trigger: dict[Subject, Any],
) -> dict[Subject, Any] | None:
    """The fix changes as few values of the trigger as it can; a subject's default first."""
    for changed in range(1, len(subjects) + 1):
        for chosen in itertools.combinations(range(len(subjects)), changed):
            options = [choices[i] if i in chosen else [trigger[s]] for i, s in enumerate(subjects)]
            found = _search(subjects, options, conditions, guard, function)
            if found is not None:
                return found
    return None


@dataclass(frozen=True, slots=True)
class _Carrying:
    """A candidate value: an object with this attribute (a `hasattr` test wants one)."""

    name: str

    def __repr__(self) -> str:
        return f"types.SimpleNamespace({self.name}=None)"


class _Function:
    """A candidate value that is callable (a `callable` test wants one): a function that
    takes anything and returns None."""

    def __call__(self, *_args: object, **_kwargs: object) -> None:
        return None

    def __repr__(self) -> str:
        return "lambda *args, **kwargs: None"


_CALLABLE = _Function()


@dataclass(frozen=True, slots=True)
class _Made:
    """A candidate value: an instance of the annotated class made without its __init__ (an
    `if x is not None:` around the guard wants one)."""

    expression: str

    def __repr__(self) -> str:
        return f"bare({self.expression})"
