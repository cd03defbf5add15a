"""Messages built elsewhere, resolved over the whole release.

A raise site that calls an exception factory (a function of the module that `return`s
`SomeError(...)`, followed through factories that call factories), raises a class whose own
`__init__` passes the message to its base (found anywhere in the release and inherited by
subclasses), or calls a raising helper with its message, gets that class and message here.
A site whose message stays fully dynamic keeps its skip reason: it still gets a draft, matched
by where it was raised.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from app.harvest.factories import scoped_factory
from app.harvest.message_pieces import Env, Field, Parts
from app.harvest.messages import parts_message, parts_of, tailed_message
from app.harvest.raise_sites import CLASS_NAME, keyword_suffix
from app.harvest.sites import UNKNOWN_CLASS, Factory, Message, ModuleFacts, RaiseSite, SkipReason

MAX_FACTORY_DEPTH = 4  # factories calling factories, followed this deep


class ReleaseMessages:
    """What resolves a message across the modules of a release, by name: the classes whose
    `__init__` builds the message (with what each class inherits from its bases), the
    module-level raising helpers, and the module-level messages another module imports
    (`raise NotImplementedError(STR_NOT_IMPL_ENC_DEC_ERR_STRS['STR_NOT_IMPL_ENC_DEC_LORA'])`).
    A name two definitions share with different messages is left out, since the call cannot
    say which one it means."""

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
        constants: dict[str, Parts | None] = {}
        for module in modules:
            for name, parts in module.constants.items():
                constants[name] = parts if constants.get(name, parts) == parts else None
        self.constants = {name: parts for name, parts in constants.items() if parts is not None}

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
    then the calls of raising helpers that pass a message, then the asserts without one and
    the log sites (at the end, so that the ids of the other sites do not depend on them)."""
    resolved = []
    for site in facts.sites:
        if (call := site.call) is not None and site.env is not None:
            outcome = _outcome(call, site.env, site.qualname, facts.factories, classes, 0)
            if outcome == (UNKNOWN_CLASS, None):
                site = replace(site, error_class=None, message=None, skip=SkipReason.DYNAMIC_CLASS)
            elif outcome is not None:
                error_class, parts = outcome
                message, skip = tailed_message(parts, keyword_suffix(call))
                site = replace(site, error_class=error_class, message=message, skip=skip)
            elif site.skip == SkipReason.DYNAMIC_MESSAGE and (
                parts := _imported(call, classes.constants)
            ):
                message, skip = tailed_message(parts, keyword_suffix(call))
                site = replace(site, message=message, skip=skip)
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
    resolved.extend(facts.log_sites)
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
    raiser = scoped_factory(raisers, callee, scope) or release.raisers.get(callee)
    if raiser is None:
        return None
    parts = parts_of(raiser.call.args[0], raiser.env | _bindings(raiser, call, env))
    message, _ = parts_message(parts)
    return None if message is None else (_raised_class(raiser, call), message)


def _raised_class(raiser: Factory, call: ast.Call) -> str:
    """The class a raising helper raises: the one it names, or, where it raises the class
    its caller passes (torch DDP's `_log_and_throw(self, err_type, err_msg)`: `raise
    err_type(err_msg)`), the class the call passes; UNKNOWN_CLASS when that is no class name."""
    raised = ast.unparse(raiser.call.func)
    if raised not in raiser.params:
        return raised
    position = raiser.params.index(raised)
    passed = next((keyword.value for keyword in call.keywords if keyword.arg == raised), None)
    positional = call.args[: position + 1]
    if passed is None and len(positional) > position:
        starred = any(isinstance(argument, ast.Starred) for argument in positional)
        passed = None if starred else positional[position]
    name = "" if passed is None else ast.unparse(passed)
    return name if _class_like(name) else UNKNOWN_CLASS


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
    factory = scoped_factory(factories, callee, scope) if depth < MAX_FACTORY_DEPTH else None
    if factory is not None:
        inner = factory.env | _bindings(factory, call, env)
        returned = ast.unparse(factory.call.func)
        found = _outcome(factory.call, inner, factory.qualname, factories, classes, depth + 1)
        if found is not None:
            return found
        if not _class_like(returned):
            return UNKNOWN_CLASS, None  # a call we cannot follow: the class is unknown
        args = factory.call.args
        return returned, parts_of(args[0], inner) if args else None
    init = classes.init_of(callee.rpartition(".")[2])
    if init is None:
        return None
    arguments = init.env | _bindings(init, call, env)
    message = init.call.args[init.message_arg]
    return callee, parts_of(message, arguments)


def _imported(call: ast.Call, constants: dict[str, Parts]) -> Parts | None:
    """The message a plain class is given as a name, or a dict's entry by a string key, that
    no local binds: another module's constant."""
    argument = call.args[0] if call.args else None
    if isinstance(argument, ast.Name):
        return constants.get(argument.id)
    if (
        isinstance(argument, ast.Subscript)
        and isinstance(argument.value, ast.Name)
        and isinstance(argument.slice, ast.Constant)
        and isinstance(argument.slice.value, str)
    ):
        return constants.get(f"{argument.value.id}[{argument.slice.value!r}]")
    return None


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
        bound[param] = parts_of(arg, env) or (Field(ast.unparse(arg)),)
    for keyword in call.keywords:
        if keyword.arg in factory.params:
            bound[keyword.arg] = parts_of(keyword.value, env) or (
                Field(ast.unparse(keyword.value)),
            )
    return bound
