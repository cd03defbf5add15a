"""One module's raise sites, read with `ast`, and the facts that resolve them later.

The collector asks the module that knows what a statement makes:
app/harvest/raise_sites.py (raises, asserts, torch checks, HTTP error responses),
app/harvest/log_sites.py (logger calls at WARNING or above, `warnings.warn`),
app/harvest/guards.py (the tests and `except` clauses around a site) and
app/harvest/factories.py (a call that may be a raising helper's, the factory a call names).

Walking each block in order, the collector tracks the local variables a message is built in
(assigned earlier in the same block or an enclosing one of the same function; `msg += ...`
extends one; when a nested `if`, loop or `with` extends it, the message ends in that tail,
optional or repeated; any other assignment to it inside a nested block makes it unknown),
the tests and `except` clauses around each site (its guard, what it translates), and what
builds messages elsewhere: factories (functions that `return SomeError(...)`), a class's
`__init__` passing a message to its base, raising helpers.
Those are resolved over the whole release by app/harvest/resolve.py.
"""

from __future__ import annotations

import ast
import warnings
from collections import ChainMap, Counter
from dataclasses import replace

from app.harvest.factories import may_raise_for_caller, scoped_factory
from app.harvest.graph_breaks import GRAPH_BREAK_CLASS, graph_break_parts
from app.harvest.guards import (
    EXITS,
    Context,
    add_condition,
    caught,
    early_exit,
    guard_text,
    negated,
)
from app.harvest.log_sites import deprecation, log_call, log_parts, logged_message
from app.harvest.message_pieces import Env, Field, Item, ListMark, Maybe, Parts, child_env
from app.harvest.messages import is_list, parts_message, parts_of
from app.harvest.raise_sites import (
    CHECK_NAMES,
    CHECKS,
    CLASS_NAME,
    RESPONSES,
    Scope,
    call_argument,
    callee_name,
    message_site,
    raise_site,
    response_class,
    response_status,
    site_at,
)
from app.harvest.sites import Factory, ModuleFacts, RaiseSite, SkipReason, TryBlock


def extract_module(source: str, rel_path: str = "<unknown>") -> ModuleFacts:
    """Parse one module (SyntaxError if it cannot be) and collect its facts; the raise
    sites still name factories and classes by name (see `resolve_sites`)."""
    with warnings.catch_warnings():  # upstream's invalid escapes are upstream's to fix
        warnings.simplefilter("ignore", (SyntaxWarning, DeprecationWarning))
        tree = ast.parse(source, filename=rel_path)
    collector = _Collector(rel_path, source, _module_constants(tree.body))
    collector.block(tree.body, ChainMap({}), Scope(), Context())
    return collector.finish()


def _module_constants(body: list[ast.stmt]) -> dict[str, Parts]:
    """Module-level names bound once to a string message (`ERR = "bad {}"`): functions see
    them, whatever the order of definitions, since they run after the module is loaded. A
    dict of such messages by string keys (vLLM 0.6's `STR_NOT_IMPL_ENC_DEC_ERR_STRS`) gives
    each as `NAME['key']`, which other modules import and raise (app/harvest/resolve.py)."""
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
            if isinstance(statement.value, ast.Dict):
                constants.update(_dict_constants(target.id, statement.value, constants))
                continue
            parts = parts_of(statement.value, constants)
            if parts is not None:
                constants[target.id] = parts
    return constants


def _dict_constants(name: str, value: ast.Dict, constants: dict[str, Parts]) -> dict[str, Parts]:
    """The messages of a module-level dict literal, each by `NAME['key']`."""
    found: dict[str, Parts] = {}
    for key, item in zip(value.keys, value.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            parts = parts_of(item, constants)
            if parts is not None:
                found[f"{name}[{key.value!r}]"] = parts
    return found


class _Collector:
    """Walks statement blocks in order, tracking local string variables, enclosing tests
    and handlers for each raise site, and what resolves messages built elsewhere."""

    def __init__(self, file_path: str, source: str, constants: dict[str, Parts]) -> None:
        self.facts = ModuleFacts(file_path, source, constants=constants)
        self.constants = constants
        self._returns: dict[str, list[tuple[ast.Call, Env]]] = {}
        self._raises: dict[str, list[tuple[ast.Call, Env]]] = {}
        self._params: dict[str, tuple[str, ...]] = {}
        self._lists: dict[str, Parts] = {}  # qualname -> the list of pieces it returns
        # (qualname, name) -> the exception a local was made as (`e = Exception("...")`)
        self._instances: dict[tuple[str, str], tuple[ast.Call, Env]] = {}
        # most modules answer no HTTP error: their statements are not searched for one
        self._responses = any(name in source for name in RESPONSES)

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

    def block(self, statements: list[ast.stmt], env: Env, scope: Scope, ctx: Context) -> None:
        exits: list[ast.expr] = []
        for statement in statements:
            self.statement(statement, env, scope, ctx, tuple(exits))
            test = early_exit(statement)
            if test is not None:
                exits.append(negated(test))

    def statement(
        self,
        node: ast.stmt,
        env: Env,
        scope: Scope,
        ctx: Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        if self._responses and isinstance(node, ast.Return | ast.Assign | ast.AnnAssign | ast.Expr):
            self._response_calls(node, node.value, env, scope, ctx, exits)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            self._deprecations(node, env, scope, ctx, exits)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            env.pop(node.name, None)
            self._function(node, scope, env if scope.in_function else None)
        elif isinstance(node, ast.ClassDef):
            env.pop(node.name, None)
            names = tuple(ast.unparse(base).rpartition(".")[2] for base in node.bases)
            self.facts.bases[node.name] = names
            self.block(node.body, ChainMap({}, self.constants), scope.enter(node), Context())
        elif isinstance(node, ast.Raise):
            made = self._instance(node, scope)
            site = raise_site(made[0], made[1], scope) if made else raise_site(node, env, scope)
            self._site(site, ctx, exits)
            if site.call is not None and self._raises_parameter(site.call, env, scope):
                self._raises.setdefault(scope.qualname or "", []).append(
                    (site.call, child_env(env))
                )
        elif isinstance(node, ast.Assert) and node.msg is not None:
            site = message_site(node, "AssertionError", node.msg, env, scope, "assert")
            self._site(site, ctx, (*exits, negated(node.test)))
        elif isinstance(node, ast.Assert):  # AssertionError with no message: found by its line
            site = site_at(
                node, scope, "AssertionError", None, SkipReason.BARE_ASSERT, kind="assert"
            )
            site = replace(site, hint_node=node.test)
            self._site(site, ctx, (*exits, negated(node.test)), self.facts.bare_asserts)
        elif isinstance(node, ast.Expr) and (appended := _appended(node, env)) is not None:
            name, item = appended
            env[name] = (*env[name], item)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            self._call_statement(node, node.value, env, scope, ctx, exits)
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            returned = env.get(node.value.id)
            if scope.in_function and scope.qualname and returned and is_list(returned):
                self._lists[scope.qualname] = (ListMark(), *returned[1:])
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            if scope.in_function and scope.qualname:
                self._returns.setdefault(scope.qualname, []).append((node.value, child_env(env)))
            self._helper_call(node, node.value, env, scope, ctx, exits)
        elif isinstance(node, ast.Assign):
            self._bind_instance(node, env, scope)
            if isinstance(node.value, ast.Call):  # `total = helper("...")`
                self._helper_call(node, node.value, env, scope, ctx, exits)
            value = parts_of(node.value, env) or self._list_value(node.value, env, scope)
            for target in node.targets:
                _bind(target, value, env)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _bind(node.target, parts_of(node.value, env), env)
        elif isinstance(node, ast.AugAssign):
            extended = ast.BinOp(node.target, node.op, node.value)
            _bind(node.target, parts_of(extended, env), env)
        else:
            self._nested_blocks(node, env, scope, ctx)

    def _bind_instance(self, node: ast.Assign, env: Env, scope: Scope) -> None:
        """Remember `e = SomeError("...")` (a capitalised class called with arguments) until
        the name is bound again: a later `raise e` raises that message."""
        for target in node.targets:
            if not isinstance(target, ast.Name) or not scope.in_function:
                continue
            key = (scope.qualname or "", target.id)
            call = node.value
            if (
                isinstance(call, ast.Call)
                and call.args
                and (callee_name(call) or "")[:1].isupper()  # before the costlier unparse
                and CLASS_NAME.fullmatch(ast.unparse(call.func))
            ):
                self._instances[key] = (call, child_env(env))
            else:
                self._instances.pop(key, None)

    def _instance(self, node: ast.Raise, scope: Scope) -> tuple[ast.Raise, Env] | None:
        """`raise e` of an exception the function made earlier: the raise of that call, at
        this line (the traceback shows it), with the locals its message was made from."""
        if not isinstance(node.exc, ast.Name) or not scope.in_function:
            return None
        made = self._instances.get((scope.qualname or "", node.exc.id))
        if made is None:
            return None
        call, env = made
        return ast.copy_location(ast.Raise(exc=call, cause=node.cause), node), env

    def _list_value(self, node: ast.expr, env: Env, scope: Scope) -> Parts | None:
        """A list of message pieces: a list literal, or what a function of the module that
        builds and returns one gives (`errors = self._validate_features()`)."""
        if isinstance(node, ast.List | ast.Tuple):
            items = [parts_of(element, env) for element in node.elts]
            if any(item is None or is_list(item) for item in items):
                return None
            return (ListMark(), *(Item(_text_parts(item)) for item in items if item))
        if isinstance(node, ast.Call) and not node.args and not node.keywords:
            return scoped_factory(self._lists, ast.unparse(node.func), scope.qualname)
        return None

    def _function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: Scope, outer: Env | None
    ) -> None:
        """A function's body; a nested one (a closure) sees the messages its enclosing
        function built before it (Dynamo's `observed_exn_gb_explanation`)."""
        inner = scope.enter(node)
        arguments = node.args
        params = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
        if scope.class_name is not None and not scope.in_function and params:
            params = params[1:]  # self or cls: the caller does not pass it
        self._params[inner.qualname or node.name] = tuple(params)
        self.facts.functions.append((node.lineno, node.end_lineno or node.lineno, node.name))
        env = ChainMap({}, self.constants) if outer is None else child_env(outer)
        self.block(node.body, env, inner, Context())

    def _call_statement(
        self,
        node: ast.Expr,
        call: ast.Call,
        env: Env,
        scope: Scope,
        ctx: Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        """A torch check, an `__init__` passing its message to the base class, a log site,
        a torch.compile graph break (app/harvest/graph_breaks.py), or a call that may be a
        raising helper's."""
        self._helper_call(node, call, env, scope, ctx, exits)
        self._log_call(node, call, env, scope, ctx, exits)
        if (parts := graph_break_parts(call, env)) is not None:
            graph_break, skip = parts_message(parts)
            site = site_at(node, scope, GRAPH_BREAK_CLASS, graph_break, skip, kind="check")
            self._site(replace(site, hint_node=call), ctx, exits)
        func = call.func
        if not isinstance(func, ast.Attribute) or not (
            func.attr == "__init__" or func.attr in CHECK_NAMES
        ):
            return  # most calls: decided without the cost of unparsing them
        callee = ast.unparse(func)
        if callee in CHECKS and call.args:
            message = call_argument(call, 1, "message")
            if isinstance(message, ast.Lambda):
                site = message_site(node, CHECKS[callee], message.body, env, scope, "check")
                self._site(site, ctx, (*exits, negated(call.args[0])))
            return
        base_init = callee.endswith(".__init__") and scope.function == "__init__"
        if base_init and scope.class_name and (call.args or call.keywords):
            offset = 0 if callee.startswith("super(") else 1  # Base.__init__(self, msg)
            if len(call.args) > offset:
                params = self._params.get(scope.qualname or "", ())
                factory = Factory(params, call, child_env(env), offset)
                self.facts.init_messages[scope.class_name] = factory

    def _log_call(
        self,
        node: ast.stmt,
        call: ast.Call,
        env: Env,
        scope: Scope,
        ctx: Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        """A log or warning site whose message is a template; one whose message is only
        known at run time (`logger.error(e)`) is left out: a log line has no frames to find
        it by."""
        found = log_call(call)
        if found is None:
            return
        kind, error_class, level = found
        message, _ = parts_message(log_parts(call, env))
        if message is not None:
            site = site_at(
                node,
                scope,
                error_class,
                message,
                None,
                kind=kind,
                level=level,
                hint_node=logged_message(call),
            )
            self._site(site, ctx, exits, self.facts.log_sites)

    def _deprecations(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
        env: Env,
        scope: Scope,
        ctx: Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        """The warning sites of a function's or class's `@deprecated("...")` decorators, at
        the decorator's line, in the scope of what they decorate."""
        for decorator in node.decorator_list:
            found = deprecation(decorator)
            if found is None:
                continue
            category, argument = found
            message, _ = parts_message(parts_of(argument, env))
            if message is None:
                continue
            site = site_at(
                node,
                scope.enter(node),
                category,
                message,
                None,
                kind="warning",
                level="WARNING",
                hint_node=argument,
            )
            self._site(replace(site, line=decorator.lineno), ctx, exits, self.facts.log_sites)

    def _response_calls(
        self,
        node: ast.stmt,
        value: ast.expr | None,
        env: Env,
        scope: Scope,
        ctx: Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        """Each call in the statement that answers an HTTP error response with a message
        (also inside `return error or self.create_error_response(...)`): a site of the class
        its `err_type` names and the status it answers. One whose message is not known here
        (`str(e)`, a parameter) is left out: a JSON body has no frames to find it by."""
        for call in ast.walk(value) if value is not None else ():
            if not isinstance(call, ast.Call) or callee_name(call) not in RESPONSES:
                continue
            message = call_argument(call, 0, "message")
            if message is None:
                continue
            site = message_site(node, response_class(call), message, env, scope, "response")
            if site.message is not None:
                status = response_status(call_argument(call, 2, "status_code"))
                self._site(replace(site, http_status=status), ctx, exits)

    def _helper_call(
        self,
        node: ast.stmt,
        call: ast.Call,
        env: Env,
        scope: Scope,
        ctx: Context,
        exits: tuple[ast.expr, ...],
    ) -> None:
        """Keep a call that may be a raising helper's until the release says (see
        `resolve_sites`)."""
        if may_raise_for_caller(call, env):
            site = site_at(node, scope, None, None, SkipReason.DYNAMIC_MESSAGE, kind="call")
            site = replace(site, call=call, env=child_env(env))
            self._site(site, ctx, exits, self.facts.helper_calls)

    def _site(
        self,
        site: RaiseSite,
        ctx: Context,
        exits: tuple[ast.expr, ...],
        into: list[RaiseSite] | None = None,
    ) -> None:
        guard = guard_text((*ctx.conditions, *exits))
        sites = self.facts.sites if into is None else into
        sites.append(replace(site, guard=guard, translates=ctx.translates))

    def _raises_parameter(self, call: ast.Call, env: Env, scope: Scope) -> bool:
        """`raise X(message)` where `message` is a parameter of the enclosing function: a
        raising helper (SGLang's `raise_error_or_warn(obj, strict, counter, message)`), whose
        callers pass the message users see."""
        if not scope.in_function or not call.args or not isinstance(call.args[0], ast.Name):
            return False
        name = call.args[0].id
        return name not in env and name in self._params.get(scope.qualname or "", ())

    def _nested_blocks(self, node: ast.stmt, env: Env, scope: Scope, ctx: Context) -> None:
        """Inner blocks see the outer variables. Afterwards a message that an `if`, a loop,
        a `with` or a `try`'s handlers only extended (`msg += "..."`; SGLang's `error_message
        += f" with exception {e}"` when a call raised) ends in that tail, optional where the
        block may not run; any other name they assign is unknown (see `_merged`)."""
        flows: list[Env] | None = None  # envs that reach the next statement, when known
        loops = isinstance(node, ast.For | ast.AsyncFor | ast.While)
        if isinstance(node, ast.If):
            body = self._inner(
                node.body, _nonempty(env, node.test), scope, add_condition(ctx, node.test)
            )
            orelse = self._inner(node.orelse, env, scope, add_condition(ctx, negated(node.test)))
            flows = [branch for branch in (body, orelse) if branch is not None]
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith):
            body = self._inner(node.body, env, scope, ctx, loops)
            else_body = getattr(node, "orelse", [])
            self.block(else_body, child_env(env), scope, ctx)
            if body is not None and not else_body:
                flows = [body, env] if loops else [body]  # a loop may not run at all
        elif isinstance(node, ast.Try | ast.TryStar):
            body = self._inner(node.body, env, scope, ctx)
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.lineno
            handled = []
            for handler in node.handlers:
                catches = caught(handler)
                self.facts.tries.append(TryBlock(first, last, catches, handler.lineno))
                translated = Context(ctx.conditions, catches)
                handled.append(self._inner(handler.body, env, scope, translated))
            for block in (node.orelse, node.finalbody):
                self.block(block, child_env(env), scope, ctx)
            if body is not None and not node.orelse and not node.finalbody:
                flows = [body, *(flow for flow in handled if flow is not None)]
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
        scope: Scope,
        ctx: Context,
        loop_body: bool = False,
    ) -> Env | None:
        """Walk a nested block in a child env; the env, or None when the block always leaves
        (ends in `return` or `raise`, or in `continue` or `break` outside a loop's body)."""
        inner = child_env(env)
        self.block(statements, inner, scope, ctx)
        leaves = (ast.Return, ast.Raise) if loop_body else EXITS
        return None if statements and isinstance(statements[-1], leaves) else inner


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
    if not is_list(env.get(name, ())):
        return None
    parts = parts_of(call.args[0], env)
    if parts is None or is_list(parts):
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
    if isinstance(test, ast.Name) and is_list(value := env.get(test.id, ())):
        inner = child_env(env)
        inner[test.id] = (ListMark(nonempty=True), *value[1:])
        return inner
    return env


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
