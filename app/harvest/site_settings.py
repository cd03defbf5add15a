"""Which of a release's settings reach one raise site: the names its guard and message use,
followed to what they are read from in the same module (a simple assignment, a config
object's field, an args object's flag, an environment read) and resolved against the
release's settings table (app/harvest/settings_table.py).

A library's users also set the public parameters of the function they call (`Adam(lr=...)`):
the raising function is parsed once, for those and for the environment it reads, and only
when it is a library's public function or may read the environment.
"""

import ast
import re
import textwrap
from bisect import bisect_left
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from app.harvest.settings_table import (
    ENV_NAME,
    MAX_DEFAULT_CHARS,
    Setting,
    SettingsTable,
    literal_text,
    one_line,
    parse_source,
)
from app.harvest.sites import Draft, ModuleFacts

DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_CONFIG_OWNER = re.compile(r"^(?:[a-z0-9]+_)*config$")  # model_config, vllm_config
_ARGS_OWNERS = frozenset({"args", "engine_args", "server_args", "envs", "self", "cfg"})
# Calls that read an environment variable by name: `os.environ.get`, `os.getenv`,
# SGLang's `get_bool_env_var`.
_ENV_READERS = ("environ.get", "getenv", "env_var")
_ENV_WORDS = ("environ", "getenv", "env_var")


def _words(name: str) -> tuple[str | None, str]:
    """(owner, attribute) of a dotted name: `self.model_config.max_model_len` ->
    (`model_config`, `max_model_len`)."""
    parts = name.split(".")
    return (parts[-2] if len(parts) > 1 else None), parts[-1]


def _camel(owner: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in owner.split("_"))


_OPERATOR_ENDS = tuple("!<>+-*/%&|^@=")  # `x != y`, `x += y`: no simple assignment


def _simple_assignment(text: str) -> tuple[bool, str, str] | None:
    """(on self, target, dotted value) of `x = a.b` or `self.x: T = a.b`; string methods
    rather than a regex, since every line of every raising module is asked."""
    head, sep, tail = text.partition("=")
    if not sep or tail.startswith("=") or head.endswith(_OPERATOR_ENDS):
        return None
    value = tail.split("#", 1)[0].strip()
    if not value or value == "None" or not all(p.isidentifier() for p in value.split(".")):
        return None
    target = head.split(":", 1)[0].strip()
    on_self = target.startswith("self.")
    name = target[5:] if on_self else target
    return (on_self, name, value) if name.isidentifier() else None


class ModuleIndex:
    """One module's lines, function spans and simple assignments (`x = a.b`,
    `self.x = a.b`), read once for all the drafts it raises."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.lines = facts.source.split("\n")
        # The lines that may read the environment, in order: a function none of them
        # falls in is not parsed for it.
        self.environment_lines = (
            [n for n, text in enumerate(self.lines, 1) if any(w in text for w in _ENV_WORDS)]
            if any(word in facts.source for word in _ENV_WORDS)
            else []
        )
        self.parsed: dict[tuple[int, int], _ParsedFunction | None] = {}
        self.assignments: dict[tuple[bool, str], list[tuple[int, str]]] = {}
        for number, text in enumerate(self.lines, start=1):
            found = _simple_assignment(text) if "=" in text else None
            if found is not None:
                on_self, name, value = found
                self.assignments.setdefault((on_self, name), []).append((number, value))

    def reads_environment(self, first: int, last: int) -> bool:
        """Whether a line from `first` to `last` may read the environment: an expression
        none of them falls in is not walked for environment reads."""
        lines = self.environment_lines
        at = bisect_left(lines, first)
        return at < len(lines) and lines[at] <= last

    def span(self, line: int) -> tuple[int, int]:
        """The innermost function holding a line, or the whole module."""
        spans = [(first, last) for first, last, _ in self.facts.functions if first <= line <= last]
        return max(spans) if spans else (1, len(self.lines))


class Resolver:
    """Finds the settings the names at one raise site come from."""

    def __init__(self, table: SettingsTable, index: ModuleIndex, draft: Draft) -> None:
        self.table = table
        self.draft = draft
        self.index = index
        self.line = draft.record.get("lineNumber") or 0
        self.function_span = index.span(self.line)

    def assigned(self, owner: str | None, attr: str) -> str | None:
        """What a local or `self.` attribute was simply assigned from, if a dotted name:
        `max_len = self.model_config.max_model_len` in the function before the raise,
        `self.x = config.x` anywhere in the module."""
        if owner is None:
            first = self.function_span[0]
            found = self.index.assignments.get((False, attr), ())
            before = [value for line, value in found if first <= line < self.line]
            return before[-1] if before else None
        if owner == "self":
            found = self.index.assignments.get((True, attr), ())
            return found[0][1] if found else None
        return None

    def config_flag(self, setting: Setting) -> Setting:
        """The flag that sets a config field, when one takes its default from it."""
        flag = self.table.flags.get(setting.name)
        owner = setting.typed_as.partition(".")[0]
        return flag if flag is not None and flag.borrows == (owner, setting.name) else setting

    def resolve(self, name: str, depth: int = 0) -> Setting | None:
        """The setting a name in the code reads, by how it is reached: an environment
        variable, a config object's field, an args object's flag, a field of the config
        class it is in, a simple assignment, and last a distinctive bare name (one with an
        underscore: `max_model_len`, not `model`)."""
        owner, attr = _words(name)
        table = self.table
        # `envs.SGLANG_X.get()`, `get_bool_env_var("SGLANG_X")`: the variable is a part.
        env = next((part for part in name.split(".") if part in table.envs), None)
        if env is not None:
            return table.envs[env]
        if owner is not None and _CONFIG_OWNER.match(owner):
            setting = table.config_classes.get(_camel(owner), {}).get(attr)
            if setting is not None:
                return self.config_flag(setting)
        args_owner = owner is not None and (owner in _ARGS_OWNERS or owner.endswith("args"))
        if args_owner and attr in table.flags and (owner != "self" or self._in_settings_class()):
            return table.flags[attr]
        if owner == "self" and self.draft.class_name in table.config_classes:
            setting = table.config_classes[str(self.draft.class_name)].get(attr)
            if setting is not None:
                return self.config_flag(setting)
        if depth < 2 and (owner is None or owner == "self"):
            source = self.assigned(owner, attr)
            if source is not None and source != name:
                found = self.resolve(source, depth + 1)
                if found is not None:
                    return found
        if "_" in attr.strip("_") and owner is None:
            if attr in table.flags:
                return table.flags[attr]
            candidates = table.configs.get(attr, [])
            if len(candidates) == 1:
                return self.config_flag(candidates[0])
        return None

    def _in_settings_class(self) -> bool:
        return self.draft.class_name in self.table.config_classes or (
            self.draft.class_name is not None and self.draft.class_name.endswith("Args")
        )

    def named_bare(self, text: str) -> Setting | None:
        """A setting a message names without backticks: a flag's field, an environment
        variable, or a config field only one config class defines."""
        table = self.table
        if text in table.envs:
            return table.envs[text]
        if text in table.flags:
            return table.flags[text]
        candidates = table.configs.get(text, [])
        return self.config_flag(candidates[0]) if len(candidates) == 1 else None

    def named(self, text: str) -> Setting | None:
        """A setting a message names itself: `--max-model-len`, `max_model_len`,
        `VLLM_PORT`, `ModelConfig.max_model_len`."""
        text = text.split("=", 1)[0].strip().rstrip("()")
        table = self.table
        if text.startswith("--"):
            return table.by_flag.get(text) or table.flags.get(text[2:].replace("-", "_"))
        if text in table.envs:
            return table.envs[text]
        if text in table.flags:
            return table.flags[text]
        owner, _, attr = text.rpartition(".")
        if owner and owner in table.config_classes and attr in table.config_classes[owner]:
            return self.config_flag(table.config_classes[owner][attr])
        return self.resolve(text) if DOTTED_NAME.fullmatch(text) else None


@dataclass(slots=True)
class FunctionReads:
    """What the raising function itself reads: its parameters (for a library its users
    call directly), what each local is assigned from before the raise, and the
    environment variables whose values reach the raise."""

    parameters: dict[str, Setting] = field(default_factory=dict)
    assigned: dict[str, set[str]] = field(default_factory=dict)  # local -> names it reads
    envs: dict[str, list[Setting]] = field(default_factory=dict)  # local -> variables read

    def parameters_of(self, name: str, depth: int = 0) -> list[Setting]:
        """The parameters a local name comes from, through assignments
        (`param_groups = list(params)`), two steps at most."""
        if name in self.parameters:
            return [self.parameters[name]]
        if depth >= 2:
            return []
        found: list[Setting] = []
        for source in sorted(self.assigned.get(name, ())):
            if source != name:
                found.extend(self.parameters_of(source, depth + 1))
        return found


def _public(class_name: str | None, function: str, def_line: str) -> bool:
    """Whether users call the function themselves: a module's function or a class's method
    (not one nested in another function), whose class and name are not private
    (`_get_env_or_raise` is plumbing; `Adam.__init__` is `Adam(...)`). A private module
    may still define public API (torch's `_tensor.py` holds `Tensor.backward`)."""
    indent = len(def_line) - len(def_line.lstrip())
    if indent > (4 if class_name else 0):
        return False
    names = [class_name or "", "" if function == "__init__" else function]
    return not any(name.startswith("_") for name in names if name)


def _last_name(node: ast.expr) -> str:
    """`environ.get` of `os.environ.get`, `getenv` of `os.getenv`: the callee's last two
    names, without unparsing it (asked of every call in a function)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = node.value
        before = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
        return f"{before}.{node.attr}" if before else node.attr
    return ""


def _env_read(node: ast.AST) -> ast.expr | None:
    """The string naming the variable an `os.environ.get("X")`, `os.getenv("X")`,
    `os.environ["X"]` or `"X" in os.environ` reads, when it is an environment name."""
    named: ast.expr | None = None
    if isinstance(node, ast.Call) and node.args:
        if _last_name(node.func).endswith(_ENV_READERS):
            named = node.args[0]
    elif isinstance(node, ast.Subscript) and _last_name(node.value).endswith("environ"):
        named = node.slice
    elif (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In | ast.NotIn)
        and _last_name(node.comparators[0]).endswith("environ")
    ):
        named = node.left
    text = literal_text(named)
    return named if named is not None and text and ENV_NAME.match(text) else None


def _env_setting(read: ast.AST, named: ast.expr, file_path: str, offset: int) -> Setting:
    """The variable a read names, at the line that spells its name."""
    name = str(literal_text(named))
    default = None
    if isinstance(read, ast.Call) and len(read.args) > 1:
        default = one_line(ast.unparse(read.args[1]), MAX_DEFAULT_CHARS)
    return Setting(name, "env", name, default, None, file_path, named.lineno + offset)


@dataclass(slots=True)
class _ParsedFunction:
    """What one function tells every raise site in it, read from one parse: its
    parameters, its assignments (line, targets, names read, the variable read, the
    parameter whose variable it reads) and the environment reads in its `if` tests."""

    name: str
    arguments: list[tuple[ast.arg, ast.expr | None]]
    assignments: list[tuple[int, list[str], set[str], Setting | None, str | None]]
    env_tests: list[tuple[int, int, Setting]]


def _parse_function(
    index: ModuleIndex, span: tuple[int, int], with_parameters: bool
) -> _ParsedFunction | None:
    """The function at a span, parsed for its parameters (a library's) or for the
    environment it reads; None when it reads none and its parameters are no settings."""
    facts = index.facts
    if not with_parameters and not index.reads_environment(span[0], span[1]):
        return None
    text = "\n".join(index.lines[span[0] - 1 : span[1]])
    tree = parse_source(textwrap.dedent(text), facts.file_path)
    if tree is None or not tree.body:
        return None
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    offset = span[0] - 1
    arguments = node.args
    listed = [*arguments.posonlyargs, *arguments.args]
    # Defaults belong to the last positional parameters.
    padded = [None] * (len(listed) - len(arguments.defaults)) + list(arguments.defaults)
    defaults: list[tuple[ast.arg, ast.expr | None]] = list(zip(listed, padded, strict=True))
    defaults.extend(zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True))
    parsed = _ParsedFunction(node.name, defaults, [], [])
    for statement in _statements(node):
        if isinstance(statement, ast.If) and index.reads_environment(
            *_lines(statement.test, offset)
        ):
            for part in ast.walk(statement.test):
                named = _env_read(part)
                if named is not None:
                    setting = _env_setting(part, named, facts.file_path, offset)
                    last = (statement.end_lineno or statement.lineno) + offset
                    parsed.env_tests.append((statement.lineno + offset, last, setting))
        if not isinstance(statement, ast.Assign | ast.AnnAssign) or statement.value is None:
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        value = statement.value
        nodes = list(ast.walk(value))
        read = {n.id for n in nodes if isinstance(n, ast.Name)}
        read_at = (
            next(((n, found) for n in nodes if (found := _env_read(n))), None)
            if index.reads_environment(*_lines(value, offset))
            else None
        )
        line = statement.lineno + offset
        env_setting = (
            _env_setting(read_at[0], read_at[1], facts.file_path, offset) if read_at else None
        )
        by_parameter = (
            value.args[0].id
            if read_at is None
            and isinstance(value, ast.Call)
            and value.args
            and isinstance(value.args[0], ast.Name)
            and _last_name(value.func).endswith(_ENV_READERS)
            else None
        )
        parsed.assignments.append((line, names, read, env_setting, by_parameter))
    _add_conditional_changes(node.body, frozenset(), parsed, offset)
    return parsed


def _lines(node: ast.expr, offset: int) -> tuple[int, int]:
    """The module's first and last line of an expression parsed at `offset`."""
    return node.lineno + offset, (node.end_lineno or node.lineno) + offset


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """The statements under a node (and its except handlers and match cases), in the order
    `ast.walk` gives them, without visiting every expression node on the way: a function's
    walk for its `if`s and assignments was most of what explaining cost torch's harvest."""
    todo = deque([node])
    while todo:
        current = todo.popleft()
        yield current
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, list) and value and isinstance(value[0], _BLOCK_NODES):
                todo.extend(value)


_BLOCK_NODES = (ast.stmt, ast.excepthandler, ast.match_case)
_GROWING = frozenset({"append", "insert", "extend", "add", "update"})


def _add_conditional_changes(
    body: Sequence[ast.AST], tests: frozenset[str], parsed: _ParsedFunction, offset: int
) -> None:
    """A local a block changes depends on the tests of the `if`s around it:
    `if strict: error_msgs.insert(...)` makes `error_msgs` read `strict`."""
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        inner = tests
        if not isinstance(statement, ast.stmt | ast.ExceptHandler):
            continue
        if isinstance(statement, ast.If | ast.While):
            inner = tests | {n.id for n in ast.walk(statement.test) if isinstance(n, ast.Name)}
        call = statement.value if isinstance(statement, ast.Expr) else None
        if (
            tests
            and isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.attr in _GROWING
        ):
            line = statement.lineno + offset
            parsed.assignments.append((line, [call.func.value.id], set(tests), None, None))
        elif tests and isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names:
                parsed.assignments.append(
                    (statement.lineno + offset, names, set(tests), None, None)
                )
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(statement, field_name, None)
            if isinstance(block, list):
                _add_conditional_changes(block, inner, parsed, offset)


def read_function(
    index: ModuleIndex,
    span: tuple[int, int],
    draft: Draft,
    with_parameters: bool,
) -> FunctionReads:
    """The raising function's parameters, assignments and environment reads. A function
    is parsed (once) only for a library's public parameters or when it may read the
    environment."""
    reads = FunctionReads()
    function, class_name = draft.function, draft.class_name
    if function is None or not (with_parameters or index.environment_lines):
        return reads
    # Only a public function's parameters are settings: a private one is parsed only for
    # the environment it reads, like any function of an application.
    public = with_parameters and _public(class_name, function, index.lines[span[0] - 1])
    if span not in index.parsed:
        index.parsed[span] = _parse_function(index, span, public)
    parsed = index.parsed[span]
    if parsed is None or parsed.name != function:
        return reads
    facts = index.facts
    raised_at = draft.record.get("lineNumber") or 0
    called = class_name if function == "__init__" and class_name else function  # Adam(lr=...)
    if public:
        for argument, default in parsed.arguments:
            name = argument.arg
            if name in ("self", "cls"):
                continue
            spelled = (
                one_line(ast.unparse(default), MAX_DEFAULT_CHARS) if default is not None else None
            )
            reads.parameters[name] = Setting(
                name,
                "parameter",
                f"{called}({name}=...)",
                spelled,
                None,
                facts.file_path,
                argument.lineno + span[0] - 1,
            )
    environment_of: dict[str, str] = {}  # local -> the parameter naming the variable it reads
    for line, names, read, env_setting, by_parameter in parsed.assignments:
        if line >= raised_at:
            continue
        for name in names:
            reads.assigned.setdefault(name, set()).update(read)
            if env_setting is not None:
                reads.envs.setdefault(name, []).append(env_setting)
            elif by_parameter is not None:
                environment_of[name] = by_parameter
    # A helper that reads the variable its caller names (`_get_env_or_raise("RANK")`):
    # every variable the module passes it reaches the raise.
    parameters = {argument.arg for argument, _ in parsed.arguments}
    for local, parameter in environment_of.items():
        if parameter not in parameters:
            continue
        passed = re.compile(
            rf"(?<![\w.]){re.escape(function)}\(\s*[\"']([A-Z][A-Z0-9_]{{2,}})[\"']"
        )
        for number, text in enumerate(index.lines, start=1):
            for name in passed.findall(text):
                setting = Setting(name, "env", name, None, None, facts.file_path, number)
                reads.envs.setdefault(local, []).append(setting)
    # A variable the guard itself reads: `if "RANK" not in os.environ: raise ...`.
    for first, last, setting in parsed.env_tests:
        if first <= raised_at <= last:
            reads.envs.setdefault("", []).append(setting)
    return reads
