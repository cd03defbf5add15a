"""The settings a release defines, by the names its code reads them through: flags, config
fields and environment variables, each with its help, its default and the file and line that
declare it.

The table is built once per release from the files the upstream project names
(`UpstreamProject.settings_sources`), so that a setting is listed only when the release
defines it: an explanation never guesses one. app/harvest/site_settings.py finds which of them
reach a raise site.
"""

import ast
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.harvest.context import github_link
from app.harvest.sites import ModuleFacts
from app.upstreams.base import UpstreamProject

MAX_HELP_CHARS = 400
MAX_DEFAULT_CHARS = 80
ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")


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
            "source": pinned_source(repo, ref, self.file_path, self.line),
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


def pinned_source(repo: str, ref: str, file_path: str, line: int) -> dict[str, Any]:
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


def parse_source(source: str, file_path: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        try:
            return ast.parse(source, filename=file_path)
        except (SyntaxError, ValueError, RecursionError):
            return None


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def literal_text(node: ast.expr | None) -> str | None:
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
        if literal_text(meta):
            return _Annotated(literal_text(meta))
        if isinstance(meta, ast.Call) and isinstance(meta.func, ast.Name):
            if meta.func.id == "Derived":
                return _Annotated(hidden=True)
            no_cli = _keyword(meta, "no_cli")
            hidden = isinstance(no_cli, ast.Constant) and no_cli.value is True
            return _Annotated(
                literal_text(_keyword(meta, "help")),
                hidden,
                literal_text(_keyword(meta, "cli_name")),
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
                return one_line(ast.unparse(factory) + "()", MAX_DEFAULT_CHARS), None
            return None, None
        if callee.endswith("get_field") and len(value.args) == 2:
            return None, value
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
        return None, value
    return one_line(ast.unparse(value), MAX_DEFAULT_CHARS), None


def _borrowed(node: ast.expr) -> tuple[str, str] | None:
    """(Class, field) of `Class.field` or `get_field(Class, "field")`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    if isinstance(node, ast.Call) and len(node.args) == 2:
        owner, name = node.args
        if isinstance(owner, ast.Name) and literal_text(name):
            return owner.id, str(literal_text(name))
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
                help_text = literal_text(following.value)
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
        flag = literal_text(node.args[0])
        if not flag or not flag.startswith("--"):
            continue
        dest = literal_text(_keyword(node, "dest")) or flag[2:].replace("-", "_")
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
            and ENV_NAME.match(node.target.id)
            and node.value is not None
        ):
            typed[node.target.id] = one_line(ast.unparse(node.value), MAX_DEFAULT_CHARS)
    found: list[Setting] = []

    def add(name: str, line: int, default: str | None) -> None:
        help_text = _comment_above(lines, line)
        help_text = one_line(help_text, MAX_HELP_CHARS) if help_text else None
        found.append(Setting(name, "env", name, default, help_text, file_path, line))

    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Dict):
            for key in value.keys:
                name = literal_text(key)
                if key is not None and name and ENV_NAME.match(name):
                    add(name, key.lineno, typed.get(name))
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, ast.Assign)
                    and len(statement.targets) == 1
                    and isinstance(statement.targets[0], ast.Name)
                    and ENV_NAME.match(statement.targets[0].id)
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
        tree = parse_source(facts.source, path)
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
        help_text = one_line(help_text, MAX_HELP_CHARS) if help_text else None
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
