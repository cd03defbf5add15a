"""Reproducer scripts generated from a raise site and the condition that guards it.

For a draft whose raise statement sits in a function or method of a module of its release,
the function is read again from the release's source (AST), the conditions on the way to the
raise are collected (the `if` tests around it, and the earlier `if ...: return|raise` that
must be false), and a bounded search over candidate values taken from the guard's literals
finds values that make the guard true (the trigger) and values that make it false while the
path to it stays the same (the fix). The call that reaches the function is, in order of
preference: the public constructor or function with those values as keyword arguments; the
constructor of a dataclass-like class whose fields the guard reads, when the guarded method
runs on construction; else the object its constructor makes with no arguments (made without
its __init__ where the constructor needs some), the attributes the guard reads set on it, and
the method called ("state set directly, not through the constructor").

Each step has its module: `source` and `guards` read the function, `solving` searches,
`calls` plans the call, `script` writes the script; this one ties them for one site.

Everything a guard may read is a parameter, an attribute of `self`, or a module constant;
anything else (locals computed in the function, calls, other objects) and every other shape
of site gets no script, and the reason is counted (`Reason`). Nothing here runs upstream
code: the scripts are verified on the real release by `app.reproducers.runner`.
"""

import ast
import re
from collections.abc import Iterator, Mapping

from app.reproducers.generation.calls import CallPlan, call_plan, unset_attributes
from app.reproducers.generation.guards import (
    Guard,
    Subject,
    avoided_rebindings,
    guard_subjects,
    inlined,
    last_return,
    local_bindings,
    path_conditions,
    path_subjects,
    substituted,
)
from app.reproducers.generation.script import reproducer_script
from app.reproducers.generation.sites import Generated, Reason, SiteSpec, Skipped, Unsupported
from app.reproducers.generation.solving import solve
from app.reproducers.generation.source import CheckCall, attribute_chain, locate, parsed

# A condition on the way to the raise that asks for CUDA: the script is for the GPU runner.
_CUDA = re.compile(r"cuda", re.IGNORECASE)


def generate(
    site: SiteSpec, source: str | None, known_values: Mapping[str, str]
) -> Generated | Skipped:
    """A script for one site, or why there is none.

    `known_values` maps a parameter name to Python source that builds a plain value for it
    (torch's optimizers need `params`), from the upstream's module."""
    try:
        return _generate(site, source, known_values)
    except Unsupported as unsupported:
        return Skipped(site.record_id, unsupported.reason)


def _generate(site: SiteSpec, source: str | None, known_values: Mapping[str, str]) -> Generated:
    if source is None:
        raise Unsupported(Reason.NO_SOURCE)
    tree = parsed(source)
    raise_node, function = locate(tree, site.line)
    function.module_name = site.module
    conditions, around = path_conditions(function.node.body, raise_node)
    guard = around[-1] if around else None
    assertion = isinstance(raise_node, ast.Assert)
    if isinstance(raise_node, ast.Assert):  # `assert test`: the guard is the test being false
        conditions, guard = [*conditions, (raise_node.test, False)], len(conditions)
        around = [*around, guard]
    unguarded = guard is None  # the raise ends the function: an earlier return is its guard
    if guard is None:
        guard = last_return(function.node, conditions)
    if guard is None:
        raise Unsupported(Reason.NO_GUARD)
    shown = conditions[guard][0]
    guard_lines = (shown.lineno, shown.end_lineno or shown.lineno)
    if not assertion and guard_lines[0] <= site.line <= guard_lines[1]:
        raise Unsupported(Reason.ONE_LINE)
    bindings = local_bindings(function, raise_node)
    conditions = [
        (inlined(substituted(test, bindings), function), truth) for test, truth in conditions
    ]
    guard_test = conditions[guard][0]
    subjects = guard_subjects(guard_test, function)
    avoided = [
        (inlined(substituted(test, bindings), function), truth)
        for test, truth in avoided_rebindings(subjects, function, raise_node)
    ]
    earlier = [test for index, (test, _truth) in enumerate(conditions) if index not in around]
    conditions += avoided
    enclosing = [conditions[index][0] for index in reversed(around) if index != guard]
    enclosing += [test for test, _truth in avoided]
    subjects += path_subjects(enclosing, subjects, function, raise_node, earlier)
    trigger, fix = solve(conditions, guard, subjects, function)
    call = call_plan(function, subjects, known_values)
    if _reads_what_is_missing(conditions, call, subjects):
        raise Unsupported(Reason.NO_VALUE_READ)
    if unset_attributes(function, raise_node, call, subjects):
        raise Unsupported(Reason.UNSET_STATE)
    trigger_call = call.render(trigger)
    fix_call = call.render(fix)
    devices = (
        ("cuda",) if any(_CUDA.search(ast.unparse(test)) for test, _ in conditions) else ("cpu",)
    )
    check = raise_node.callee if isinstance(raise_node, CheckCall) else None
    guarded = Guard(shown, guard_test, guard_lines, assertion, unguarded, check)
    script = reproducer_script(site, function, call, trigger, fix, guarded, devices)
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


def _reads_what_is_missing(
    conditions: list[tuple[ast.expr, bool]], call: CallPlan, subjects: list[Subject]
) -> bool:
    """Whether a condition on the way always reads an attribute the script's argument does
    not have: of an argument given None (`if cache_size.will_exceed(): return`), or one of a
    stand-in (types.SimpleNamespace) the script does not set (`if user.op == "output"`). The
    call would fail there, before the guard."""
    nones = {name for name, value in call.extra.items() if value == "None"}
    set_paths: dict[str, list[tuple[str, ...]]] = {}
    for subject in subjects:
        if not subject.attr and subject.path:
            set_paths.setdefault(subject.name, []).append(subject.path)
    stand_ins = {root.name for root, cls in call.objects.items() if cls is None and not root.attr}

    def evaluated(node: ast.AST) -> Iterator[ast.AST]:
        yield node
        if isinstance(node, ast.BoolOp):  # the first operand only: the rest may be skipped
            yield from evaluated(node.values[0])
        elif isinstance(node, ast.IfExp):
            yield from evaluated(node.test)
        elif not isinstance(node, ast.Lambda | ast.comprehension | ast.GeneratorExp):
            for child in ast.iter_child_nodes(node):
                yield from evaluated(child)

    for test, _truth in conditions:
        for node in evaluated(test):
            chain = attribute_chain(node) if isinstance(node, ast.Attribute) else None
            if chain is None:
                continue
            root, path = chain[0], tuple(chain[1])
            if root in nones:
                return True
            if root in stand_ins and not any(
                path[: len(known)] == known or known[: len(path)] == path
                for known in set_paths.get(root, [])
            ):
                return True
    return False
