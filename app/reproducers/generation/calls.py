"""The call that reaches the function with chosen values, in order of preference: the public
constructor or function with those values as keyword arguments; the constructor of a
dataclass-like class whose fields the guard reads, when the guarded method runs on
construction; else the object its constructor makes with no arguments (made without its
__init__ where the constructor needs some, `cls.__new__(cls)`), the attributes the guard reads
set on it, and the method called ("state set directly, not through the constructor").
"""

import ast
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.reproducers.generation.guards import Subject, annotation_of
from app.reproducers.generation.sites import Reason, Unsupported
from app.reproducers.generation.source import (
    NO_VALUE,
    Function,
    decorator_names,
    literal_value,
    runtime_class,
)

DIRECT_STATE_NOTE = "state set directly, not through the constructor"
_DATACLASS_DECORATORS = frozenset({"dataclass", "config", "dataclasses.dataclass"})
_MODEL_BASES = frozenset({"BaseModel", "Struct", "msgspec.Struct"})
_TENSOR_PLACEHOLDER = "torch.zeros(2)"
# A required argument the guard does not read gets a plain value of its annotation's type.
_PLACEHOLDERS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"Tensor"}), _TENSOR_PLACEHOLDER),
    (frozenset({"list", "List", "Sequence", "Iterable"}), "[]"),
    (frozenset({"tuple", "Tuple"}), "()"),
    (frozenset({"dict", "Dict", "Mapping"}), "{}"),
    (frozenset({"bool"}), "False"),
    (frozenset({"int"}), "0"),
    (frozenset({"float"}), "0.0"),
    (frozenset({"str"}), "'errkb'"),  # non-empty: a message may print it
)
_ON_CONSTRUCTION = frozenset({"__init__", "__post_init__"})
_VALIDATOR_DECORATORS = frozenset({"model_validator", "field_validator"})


@dataclass(slots=True)
class CallPlan:
    """How the script reaches the function with chosen values."""

    cls: str | None
    function: str
    kind: str  # function | constructor | fields | direct | static | property | setter
    extra: dict[str, str] = field(default_factory=dict)  # required parameters, as source
    positional_only: set[str] = field(default_factory=set)
    # The class of each object whose attributes the guard reads (a parameter, or `self.x`),
    # as the module names it at run time; None: a stand-in (types.SimpleNamespace).
    objects: dict[Subject, str | None] = field(default_factory=dict)
    # For a method called on an object made for the script: the attributes its class's
    # __init__ sets to literal values (`self.total_calls = 0`), set where __init__ cannot run.
    initial: dict[str, Any] = field(default_factory=dict)

    @property
    def direct_state(self) -> bool:
        return self.kind in ("direct", "property", "setter") or bool(self.objects)

    @property
    def stand_ins(self) -> bool:
        return any(cls is None for cls in self.objects.values())

    def render(self, values: Mapping[Subject, Any]) -> str:
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
        reach = f".{self.function}({arguments})"
        if self.kind == "property":
            reach = f".{self.function}"
        elif self.kind == "setter":
            reach = f".{self.function} = {self._assigned(values, shown=True)}"
        return f"{self.cls} with {state} ({DIRECT_STATE_NOTE}){reach}"

    def _assigned(self, values: Mapping[Subject, Any], shown: bool = False) -> str:
        """A setter's one argument, as the value assigned to the property."""
        return self._arguments(values, shown).partition("=")[2]

    def _object(self, root: Subject, values: Mapping[Subject, Any], shown: bool) -> str:
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

    def _arguments(self, values: Mapping[Subject, Any], shown: bool = False) -> str:
        keyword = self.kind == "fields"
        given = {s.name: repr(v) for s, v in values.items() if s.attr == keyword and not s.path}
        for root in self.objects:
            if root.attr == keyword:
                given[root.name] = self._object(root, values, shown)
        merged = {**self.extra, **given}
        positional = [merged.pop(n) for n in list(merged) if n in self.positional_only]
        return ", ".join([*positional, *(f"{n}={v}" for n, v in merged.items())])

    def statements(self, values: Mapping[Subject, Any]) -> list[str]:
        """The body of the scenario function, reaching the function with `values`."""
        arguments = self._arguments(values)
        if self.kind == "function":
            return [f"return module.{self.function}({arguments})"]
        if self.kind in ("constructor", "fields"):
            return [f"return module.{self.cls}({arguments})"]
        if self.kind == "static":
            return [f"return module.{self.cls}.{self.function}({arguments})"]
        initial = "".join(f", {name}={value!r}" for name, value in self.initial.items())
        lines = [f"obj = constructed(module.{self.cls}{initial})  # {DIRECT_STATE_NOTE}"]
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
        elif self.kind == "setter":
            lines.append(f"obj.{self.function} = {self._assigned(values)}")
        else:
            lines.append(f"return obj.{self.function}({arguments})")
        return lines


@dataclass(frozen=True, slots=True)
class _Leaf:
    """A chosen value at the end of an object's attribute path."""

    value: Any


def call_plan(function: Function, subjects: list[Subject], known: Mapping[str, str]) -> CallPlan:
    node, cls = function.node, function.cls
    if any(  # `x.a` and `x.a.b` at once: `a` would be both a chosen value and an object
        a.root() == b.root() and a.path != b.path and b.path[: len(a.path)] == a.path
        for a in subjects
        for b in subjects
    ):
        raise Unsupported(Reason.COMPUTED)
    params = {s.name for s in subjects if not s.attr}
    attrs = {s.name for s in subjects if s.attr}
    objects = {
        s.root(): runtime_class(function, annotation_of(s.root(), function))
        for s in subjects
        if s.path
    }
    missing = [name for name in function.required if name not in params]
    extra = {
        name: known.get(name) or _placeholder(function.params[name], name in function.tensors)
        for name in missing
    }
    decorators = decorator_names(node)
    plan = functools.partial(CallPlan, objects=objects)
    if cls is None:
        return plan(None, node.name, "function", extra, function.positional_only)
    if "classmethod" in decorators and attrs:
        raise Unsupported(Reason.UNREACHABLE)
    if decorators & {"staticmethod", "classmethod"}:
        return plan(cls.name, node.name, "static", extra, function.positional_only)
    if node.name == "__init__":
        if attrs:
            raise Unsupported(Reason.COMPUTED)
        return plan(cls.name, node.name, "constructor", extra, function.positional_only)
    wraps = _pydantic(function.module, cls)  # it turns a validator's ValueError into its own
    if attrs & _methods(cls):
        raise Unsupported(Reason.COMPUTED)  # a property or method, not state to set
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
    if f"{node.name}.setter" in decorators and len(node.args.args) == 2:
        return plan(cls.name, node.name, "setter", extra, initial=_init_literals(cls))
    if node.name != "__post_init__" and node.name.startswith("__") and node.name.endswith("__"):
        raise Unsupported(Reason.UNREACHABLE)
    return plan(
        cls.name, node.name, "direct", extra, function.positional_only, initial=_init_literals(cls)
    )


def unset_attributes(
    function: Function, raise_node: ast.stmt, plan: CallPlan, subjects: list[Subject]
) -> list[str]:
    """The attributes of `self` that the method reads on its way to the raise, which its
    class's own __init__ computes from the arguments it requires, and so the script's
    object, made without __init__, lacks (`module == self.model` before
    DebugUnderflowOverflow's guard): the call would raise AttributeError before the site."""
    node, cls = function.node, function.cls
    if cls is None or plan.kind not in ("direct", "property", "setter") or not node.args.args:
        return []
    if not _init_needs_arguments(cls):
        return []  # `constructed` runs __init__, which sets them
    owner = node.args.args[0].arg
    given = {subject.name for subject in subjects if subject.attr} | set(plan.initial)
    computed = set(_init_assignments(cls)) - given
    read = {
        child.attr
        for part in _path_parts(node.body, raise_node)
        for child in ast.walk(part)
        if isinstance(child, ast.Attribute)
        and isinstance(child.ctx, ast.Load)
        and isinstance(child.value, ast.Name)
        and child.value.id == owner
    }
    return sorted(read & computed)


def _path_parts(body: list[ast.stmt], target: ast.stmt) -> list[ast.AST]:
    """What runs before the raise in the blocks that hold it: each earlier statement (of an
    earlier `if` or loop only its header: its blocks may not run), the headers of the compound
    statements around it, and the raise itself."""
    parts: list[ast.AST] = []
    for statement in body:
        if statement is target:
            return [*parts, statement]
        end = statement.end_lineno or statement.lineno
        if isinstance(statement, _MAY_SKIP) and not statement.lineno <= target.lineno <= end:
            parts += _headers(statement)  # its blocks run only when it says so
            continue
        if not statement.lineno <= target.lineno <= end or not _blocks(statement):
            parts.append(statement)
            continue
        parts += _headers(statement)
        for block in _blocks(statement):
            if any(s.lineno <= target.lineno <= (s.end_lineno or s.lineno) for s in block):
                return parts + _path_parts(block, target)
        return parts
    return parts


_MAY_SKIP = (ast.If, ast.For, ast.AsyncFor, ast.While)


def _headers(statement: ast.stmt) -> list[ast.AST]:
    """What a compound statement evaluates before its blocks: a test, an iterable, items."""
    return [
        value
        for name in ("test", "iter", "items", "subject")
        for value in _as_list(getattr(statement, name, None))
    ]


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement blocks a compound statement holds."""
    blocks = [getattr(statement, name, None) for name in ("body", "orelse", "finalbody")]
    blocks += [handler.body for handler in getattr(statement, "handlers", ())]
    blocks += [case.body for case in getattr(statement, "cases", ())]
    return [block for block in blocks if isinstance(block, list) and block]


def _as_list(value: Any) -> list[ast.AST]:
    if isinstance(value, ast.AST):
        return [value]
    return [item for item in value or () if isinstance(item, ast.AST)]


def _inits(cls: ast.ClassDef) -> list[ast.FunctionDef]:
    """The class's own __init__, if it has one."""
    return [m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"]


def _init_needs_arguments(cls: ast.ClassDef) -> bool:
    """Whether the class's own __init__ takes arguments without defaults: its object is then
    made without __init__ (`constructed` calls the class with none first)."""
    for member in _inits(cls):
        arguments = member.args
        positional = [*arguments.posonlyargs, *arguments.args][1:]
        keyword = [d for d in arguments.kw_defaults if d is None]
        return len(positional) > len(arguments.defaults) or bool(keyword)
    return False


def _init_assignments(cls: ast.ClassDef) -> list[str]:
    """The attribute each assignment of the class's own __init__ to its object names, once
    per assignment."""
    assigned: list[str] = []
    for member in _inits(cls):
        owner = member.args.args[0].arg if member.args.args else "self"
        assigned += [
            target.attr
            for child in ast.walk(member)
            if isinstance(child, ast.Assign | ast.AnnAssign | ast.AugAssign)
            for target in (child.targets if isinstance(child, ast.Assign) else [child.target])
            if isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == owner
        ]
    return assigned


def _init_literals(cls: ast.ClassDef) -> dict[str, Any]:
    """The attributes the class's own __init__ sets once, in its body's top level, to a
    literal value (`self.total_calls = 0`, `self.frame = []`): a method often reads them before
    its guard, and an object made without __init__ would lack them."""
    found: dict[str, Any] = {}
    for member in _inits(cls):
        owner = member.args.args[0].arg if member.args.args else "self"
        for statement in member.body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(target := statement.targets[0], ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == owner
                and target.attr.isidentifier()
                and (value := literal_value(statement.value)) is not NO_VALUE
            ):
                found[target.attr] = value
    assigned = _init_assignments(cls)
    return {name: value for name, value in found.items() if assigned.count(name) == 1}


def _placeholder(arg: ast.arg, tensor: bool) -> str:
    """A plain value for a required argument the guard does not read, from its annotation
    or, for a tensor (tensors.py), a tensor (None when it has none, or names no plain type):
    the trigger must reach the raise with it, and the run shows whether it does."""
    if tensor:
        return _TENSOR_PLACEHOLDER
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
    decorators = decorator_names(cls)
    return "config" in decorators or (  # vLLM's @config makes a pydantic dataclass
        imports
        and bool(decorators & _DATACLASS_DECORATORS or bases & {"BaseModel", "pydantic.BaseModel"})
    )


def _runs_on_construction(cls: ast.ClassDef, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether constructing the class runs this method: it is __post_init__, a validator,
    or called as `self.<name>()` by a statement of __init__'s or __post_init__'s own body
    (one inside an `if` runs only when its condition holds: `_verify_greedy_sampling` only
    for a greedy temperature, so the constructor's defaults never reach it)."""
    if node.name in _ON_CONSTRUCTION or decorator_names(node) & _VALIDATOR_DECORATORS:
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
    if not (decorator_names(cls) & _DATACLASS_DECORATORS or bases & _MODEL_BASES):
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
