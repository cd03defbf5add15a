"""What a draft means to the person who hit it, read from the same release: the settings
that reach the raise site, the advice upstream's own message gives, and the trigger in words.

A pasted error asks "which setting do I change?", and the release usually answers it: the
guard and the message name values (`max_model_len`), and the release's own settings files
say which flag, config field or environment variable each one is, with its help and
default. Every statement carries where it was read (file and line at the harvested ref),
and a setting is listed only when the release defines it: nothing is guessed.

The settings table is built once per release from the files the upstream project names
(`UpstreamProject.settings_sources`); the release that changed a site is told at read
time from its locations (app.records.locations), which know every harvested release.
"""

import ast
import re
import textwrap
import warnings
from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.harvest.context import github_link
from app.harvest.entrypoints import add_entry_points
from app.harvest.sites import Draft, ModuleFacts
from app.upstreams.base import UpstreamProject

MAX_HELP_CHARS = 400
MAX_DEFAULT_CHARS = 80
MAX_SETTINGS = 6
MAX_ADVICE = 4
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")
_BACKTICKED = re.compile(r"`([^`\s]{2,80})`")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
_CONFIG_OWNER = re.compile(r"^(?:[a-z0-9]+_)*config$")  # model_config, vllm_config
_ARGS_OWNERS = frozenset({"args", "engine_args", "server_args", "envs", "self", "cfg"})
# The sentence openings with which a message tells its reader what to do.
_ADVICE = re.compile(
    r"^(?:try|please|consider|use|set|increase|decrease|reduce|lower|raise|make sure|"
    r"ensure|check|install|upgrade|downgrade|pass|specify|enable|disable|add|remove|"
    r"see|refer|run|you (?:can|may|should|need|must|might)|to (?:fix|avoid|use|enable|"
    r"disable|resolve|run|serve|load)|if you|call|restart|update|switch|change|avoid|"
    r"do not|don't|make|alternatively|otherwise)\b",
    re.IGNORECASE,
)
# Advice inside a sentence: `X is not supported, please use Y instead.`
_ADVICE_INSIDE = re.compile(
    r"(?:^|[,;:(]\s*|\s-\s|\bso\s|\bor\s)(?:please|try|consider|use|set|make sure|"
    r"you (?:can|may|should|need|must|might))\b|\bplease\b|\binstead\b",
    re.IGNORECASE,
)
# A setting named bare in the message: `max_model_len`, `VLLM_PORT` (an underscore in it,
# so that a common word is never taken for one).
_BARE_SETTING = re.compile(
    r"(?<![\w.{/-])([a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9]|[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])(?![\w}(/])"
)
_URL = re.compile(r"https?://\S+")
# Calls that read an environment variable by name: `os.environ.get`, `os.getenv`,
# SGLang's `get_bool_env_var`.
_ENV_READERS = ("environ.get", "getenv", "env_var")
_ENV_WORDS = ("environ", "getenv", "env_var")
# A sentence ends at `. ` before a capital, or where a placeholder runs into the next one
# (`{estimated_msg}Try increasing ...`).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])|(?<=\})(?=[A-Z][a-z])")


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting a user types: a flag, a config field or an environment variable."""

    name: str  # the attribute the code reads: max_model_len, VLLM_PORT
    kind: str  # flag | argument | config | env | parameter
    typed_as: str  # --max-model-len, ModelConfig.max_model_len, VLLM_PORT
    default: str | None
    help: str | None
    file_path: str
    line: int
    borrows: tuple[str, str] | None = None  # the config field a flag takes its default from

    def document(self, repo: str, ref: str, via: str) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "typedAs": self.typed_as,
            "default": self.default,
            "help": self.help,
            "via": via,
            "source": _source(repo, ref, self.file_path, self.line),
        }


@dataclass(slots=True)
class SettingsTable:
    """A release's settings by the names its code reads them through."""

    flags: dict[str, Setting] = field(default_factory=dict)  # field name -> flag setting
    by_flag: dict[str, Setting] = field(default_factory=dict)  # --flag -> setting
    configs: dict[str, list[Setting]] = field(default_factory=dict)  # field -> Class.field
    config_classes: dict[str, dict[str, Setting]] = field(default_factory=dict)
    envs: dict[str, Setting] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.flags) + sum(map(len, self.configs.values())) + len(self.envs)


def _source(repo: str, ref: str, file_path: str, line: int) -> dict[str, Any]:
    return {
        "ref": ref,
        "filePath": file_path,
        "lineNumber": line,
        "githubUrl": github_link(repo, ref, file_path, line),
    }


def _in_sources(file_path: str, package: str, sources: Iterable[str]) -> bool:
    """Whether a harvested file is one of these paths below the package folder (a file,
    or any file under a folder)."""
    for source in sources:
        below = f"{package}/{source}"
        # `config` is a folder in newer releases, `config.py` in older ones.
        if file_path.endswith(("/" + below, "/" + below + ".py")) or file_path in (
            below,
            below + ".py",
        ):
            return True
        if f"/{below}/" in "/" + file_path and file_path.endswith(".py"):
            return True
    return False


def _parse(source: str, file_path: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        try:
            return ast.parse(source, filename=file_path)
        except (SyntaxError, ValueError, RecursionError):
            return None


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _text(node: ast.expr | None) -> str | None:
    """A string the code spells out: a literal or implicitly concatenated literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
        return "".join(str(part) for part in parts) or None
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


@dataclass(frozen=True, slots=True)
class _Annotated:
    """What an `A[T, "help"]` or `A[T, Arg(help=..., cli_name=...)]` annotation says."""

    help: str | None = None
    hidden: bool = False  # off the command line: `Arg(no_cli=True)`, `Derived(...)`
    cli_name: str | None = None


def _annotated(annotation: ast.expr) -> _Annotated:
    if not isinstance(annotation, ast.Subscript) or not isinstance(annotation.slice, ast.Tuple):
        return _Annotated()
    for meta in annotation.slice.elts[1:]:
        if _text(meta):
            return _Annotated(_text(meta))
        if isinstance(meta, ast.Call) and isinstance(meta.func, ast.Name):
            if meta.func.id == "Derived":
                return _Annotated(hidden=True)
            no_cli = _keyword(meta, "no_cli")
            hidden = isinstance(no_cli, ast.Constant) and no_cli.value is True
            return _Annotated(
                _text(_keyword(meta, "help")), hidden, _text(_keyword(meta, "cli_name"))
            )
    return _Annotated()


def _default(value: ast.expr | None) -> tuple[str | None, ast.expr | None]:
    """The default a field's value spells, and the other field it names when it borrows
    one (`ModelConfig.max_model_len`, `get_field(CacheConfig, "x")`)."""
    if value is None:
        return None, None
    if isinstance(value, ast.Call):
        callee = ast.unparse(value.func)
        if callee.endswith(("field", "Field")) and not callee.endswith("get_field"):
            given = _keyword(value, "default")
            if given is None and value.args and callee.endswith("Field"):
                given = value.args[0]
            if given is not None:
                return _default(given)
            factory = _keyword(value, "default_factory")
            if factory is not None:
                return _one_line(ast.unparse(factory) + "()", MAX_DEFAULT_CHARS), None
            return None, None
        if callee.endswith("get_field") and len(value.args) == 2:
            return None, value
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        return None, value
    return _one_line(ast.unparse(value), MAX_DEFAULT_CHARS), None


def _borrowed(node: ast.expr) -> tuple[str, str] | None:
    """(Class, field) of `Class.field` or `get_field(Class, "field")`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    if isinstance(node, ast.Call) and len(node.args) == 2:
        owner, name = node.args
        if isinstance(owner, ast.Name) and _text(name):
            return owner.id, str(_text(name))
    return None


@dataclass(slots=True)
class _Field:
    owner: str
    name: str
    line: int
    file_path: str
    default: str | None
    borrows: ast.expr | None
    help: str | None
    cli_name: str | None = None


def _class_fields(tree: ast.Module, file_path: str) -> list[_Field]:
    """The annotated fields of every class in a module, with their help and default."""
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for index, statement in enumerate(body):
            if not isinstance(statement, ast.AnnAssign) or not isinstance(
                statement.target, ast.Name
            ):
                continue
            name = statement.target.id
            if name.startswith("_") or "ClassVar" in ast.unparse(statement.annotation):
                continue
            annotated = _annotated(statement.annotation)
            if annotated.hidden:
                continue
            help_text = annotated.help
            following = body[index + 1] if index + 1 < len(body) else None
            if help_text is None and isinstance(following, ast.Expr):
                help_text = _text(following.value)
            default, borrows = _default(statement.value)
            found.append(
                _Field(
                    node.name,
                    name,
                    statement.lineno,
                    file_path,
                    default,
                    borrows,
                    help_text,
                    annotated.cli_name,
                )
            )
    return found


def _declared_flags(tree: ast.Module) -> dict[str, str]:
    """`add_argument("--flag", ..., dest="name")` calls: field name -> the flag typed."""
    flags: dict[str, str] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument" or not node.args:
            continue
        flag = _text(node.args[0])
        if not flag or not flag.startswith("--"):
            continue
        dest = _text(_keyword(node, "dest")) or flag[2:].replace("-", "_")
        flags.setdefault(dest, flag)
    return flags


def _comment_above(lines: list[str], line: int) -> str | None:
    """The `#` comment lines right above a line (1-based), joined."""
    comments: list[str] = []
    at = line - 2
    while at >= 0 and lines[at].strip().startswith("#"):
        comments.insert(0, lines[at].strip().lstrip("#").strip())
        at -= 1
    text = " ".join(part for part in comments if not set(part) <= set("=- "))
    return text or None


def _environment(tree: ast.Module, source: str, file_path: str) -> list[Setting]:
    """Environment variables a module declares: keys of a module-level dict of upper-case
    names (`environment_variables = {"VLLM_PORT": ...}`) and upper-case class attributes
    built by a call (`SGLANG_X = EnvBool(False)`); their defaults from a typed declaration
    (`VLLM_PORT: int | None = None`) or the call's first argument."""
    lines = source.split("\n")
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _ENV_NAME.match(node.target.id)
            and node.value is not None
        ):
            typed[node.target.id] = _one_line(ast.unparse(node.value), MAX_DEFAULT_CHARS)
    found: list[Setting] = []

    def add(name: str, line: int, default: str | None) -> None:
        help_text = _comment_above(lines, line)
        help_text = _one_line(help_text, MAX_HELP_CHARS) if help_text else None
        found.append(Setting(name, "env", name, default, help_text, file_path, line))

    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Dict):
            for key in value.keys:
                name = _text(key)
                if key is not None and name and _ENV_NAME.match(name):
                    add(name, key.lineno, typed.get(name))
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign)
                    and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)
                    and _ENV_NAME.match(statement.targets[0].id)
                    and isinstance(statement.value, ast.Call)
                ):
                    call = statement.value
                    default = ast.unparse(call.args[0]) if call.args else None
                    add(statement.targets[0].id, statement.lineno, default)
    return found


def settings_table(modules: Sequence[ModuleFacts], project: UpstreamProject) -> SettingsTable:
    """The settings a release defines, read once from its project's settings files."""
    table = SettingsTable()
    fields: list[_Field] = []
    flags_declared: dict[str, str] = {}
    flag_owners: set[str] = set()
    for facts in modules:
        path = facts.file_path
        if not _in_sources(path, project.package, project.settings_sources):
            continue
        tree = _parse(facts.source, path)
        if tree is None:
            continue
        if _in_sources(path, project.package, project.env_sources):
            for setting in _environment(tree, facts.source, path):
                table.envs.setdefault(setting.name, setting)
            continue
        module_fields = _class_fields(tree, path)
        fields.extend(module_fields)
        if _in_sources(path, project.package, project.flag_sources):
            flags_declared |= _declared_flags(tree)
            flag_owners |= {f.owner for f in module_fields}
    by_class: dict[tuple[str, str], _Field] = {(f.owner, f.name): f for f in fields}

    def lent(item: _Field, depth: int = 0) -> _Field:
        """The field whose default and help a field borrows (`= ModelConfig.x`)."""
        borrowed = _borrowed(item.borrows) if item.borrows is not None else None
        source = by_class.get(borrowed) if borrowed else None
        return lent(source, depth + 1) if source is not None and depth < 4 else item

    for item in fields:
        origin = lent(item)
        help_text = item.help or origin.help
        help_text = _one_line(help_text, MAX_HELP_CHARS) if help_text else None
        default = item.default if item.borrows is None else origin.default
        if item.owner in flag_owners and project.flag_classes_match(item.owner):
            derived = "--" + item.name.replace("_", "-") if project.flags_from_fields else None
            flag = flags_declared.get(item.name) or item.cli_name or derived
            borrowed = _borrowed(item.borrows) if item.borrows is not None else None
            # A field no flag sets is still an argument of the class (`LLM(...)` passes it).
            kind, typed_as = ("flag", flag) if flag else ("argument", f"{item.owner}.{item.name}")
            setting = Setting(
                item.name, kind, typed_as, default, help_text, item.file_path, item.line, borrowed
            )
            table.flags.setdefault(item.name, setting)
            table.by_flag.setdefault(typed_as, setting)
        elif item.owner not in flag_owners:
            typed_as = f"{item.owner}.{item.name}"
            setting = Setting(
                item.name, "config", typed_as, default, help_text, item.file_path, item.line
            )
            table.configs.setdefault(item.name, []).append(setting)
            table.config_classes.setdefault(item.owner, {})[item.name] = setting
    return table


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


class _ModuleIndex:
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


class _Resolver:
    """Finds the settings the names at one raise site come from."""

    def __init__(self, table: SettingsTable, index: _ModuleIndex, draft: Draft) -> None:
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
        return self.resolve(text) if _NAME.fullmatch(text) else None


@dataclass(slots=True)
class _FunctionReads:
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
    text = _text(named)
    return named if named is not None and text and _ENV_NAME.match(text) else None


def _env_setting(read: ast.AST, named: ast.expr, file_path: str, offset: int) -> Setting:
    """The variable a read names, at the line that spells its name."""
    name = str(_text(named))
    default = None
    if isinstance(read, ast.Call) and len(read.args) > 1:
        default = _one_line(ast.unparse(read.args[1]), MAX_DEFAULT_CHARS)
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
    index: _ModuleIndex, span: tuple[int, int], with_parameters: bool
) -> _ParsedFunction | None:
    """The function at a span, parsed for its parameters (a library's) or for the
    environment it reads; None when it reads none and its parameters are no settings."""
    facts = index.facts
    if not with_parameters and not index.reads_environment(span[0], span[1]):
        return None
    text = "\n".join(index.lines[span[0] - 1 : span[1]])
    tree = _parse(textwrap.dedent(text), facts.file_path)
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


def _read_function(
    index: _ModuleIndex,
    span: tuple[int, int],
    draft: Draft,
    with_parameters: bool,
) -> _FunctionReads:
    """The raising function's parameters, assignments and environment reads. A function
    is parsed (once) only for a library's public parameters or when it may read the
    environment."""
    reads = _FunctionReads()
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
                _one_line(ast.unparse(default), MAX_DEFAULT_CHARS) if default is not None else None
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


def _sentences(message: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(message) if part.strip()]


def explain(
    draft: Draft,
    index: _ModuleIndex,
    table: SettingsTable,
    project: UpstreamProject,
    repo: str,
    ref: str,
) -> dict[str, Any]:
    """The explanation of one draft: settings, advice and trigger, each with its source."""
    record = draft.record
    resolver = _Resolver(table, index, draft)
    reads = _read_function(index, resolver.function_span, draft, project.parameters_are_settings)
    message = record["errorMessage"]
    guard = draft.site.guard if draft.site else None
    listed: dict[str, dict[str, Any]] = {}
    resolved: dict[str, str] = {}  # name in the code -> what the user types

    def take(setting: Setting | None, code_name: str, via: str) -> None:
        if setting is None:
            return
        resolved.setdefault(code_name, setting.typed_as)
        if setting.typed_as not in listed and len(listed) < MAX_SETTINGS:
            listed[setting.typed_as] = setting.document(repo, ref, via)

    def from_code(name: str, via: str) -> None:
        root = name.split(".", 1)[0]  # `port.isdigit` reads the local `port`
        found = [*reads.parameters_of(root), *reads.envs.get(root, [])]
        for setting in found:
            take(setting, name, via)
        if not found:
            take(resolver.resolve(name), name, via)

    for setting in reads.envs.get("", []):
        take(setting, setting.name, "guard")
    for name in _NAME.findall(guard or ""):
        from_code(name, "guard")
    for name in _PLACEHOLDER.findall(message):
        from_code(name, "message")
    prose = _PLACEHOLDER.sub(" ", _URL.sub(" ", message))
    for text in [*_FLAG.findall(message), *_BACKTICKED.findall(message)]:
        named = reads.parameters.get(text.split("=", 1)[0].strip())
        take(named or resolver.named(text), text, "message")
    for text in _BARE_SETTING.findall(prose):
        take(reads.parameters.get(text) or resolver.named_bare(text), text, "message")
    advice: list[dict[str, Any]] = []
    for sentence in _sentences(message):
        url = _URL.search(sentence)
        telling = _ADVICE.match(sentence) or _ADVICE_INSIDE.search(sentence)
        if not (telling or url) or len(advice) >= MAX_ADVICE:
            continue
        names = [
            *_FLAG.findall(sentence),
            *_BACKTICKED.findall(sentence),
            *_BARE_SETTING.findall(_PLACEHOLDER.sub(" ", sentence)),
        ]
        linked = [resolved[text] for text in names if text in resolved]
        advice.append(
            {
                "text": sentence,
                "settings": list(dict.fromkeys(linked)),
                "url": url.group(0).rstrip(".,;)") if url else None,
            }
        )
    site = _source(repo, ref, record["filePath"], record.get("lineNumber") or 0)
    trigger = None
    if guard:
        where = [
            f"`{name}` is `{typed}`"
            for name, typed in resolved.items()
            if name in guard and name != typed
        ]
        text = f"raised when `{guard}`" + (", where " + ", ".join(where) if where else "")
        trigger = {"text": text, "source": site}
    return {"settings": list(listed.values()), "advice": advice, "trigger": trigger, "source": site}


def add_explanations(
    drafts: Sequence[Draft],
    modules: Sequence[ModuleFacts],
    project: UpstreamProject | None,
    repo: str,
    ref: str,
) -> None:
    """Put each draft's explanation into its code context, beside the guard it reads."""
    if project is None:
        return
    table = settings_table(modules, project)
    by_path = {facts.file_path: facts for facts in modules}
    indexes: dict[str, _ModuleIndex] = {}
    for draft in drafts:
        path = draft.record["filePath"]
        if path not in by_path:
            continue
        if path not in indexes:
            indexes[path] = _ModuleIndex(by_path[path])
        draft.context["explanation"] = explain(draft, indexes[path], table, project, repo, ref)
    add_entry_points(drafts, modules, project, repo, ref)
