"""Reproducer scripts generated from raise sites: real drafts of real releases, and the
shapes of site the generator refuses, each with its reason."""

import abc
import ast
import os
import subprocess
import sys
import types
from textwrap import dedent

import pytest
from sqlmodel import Session

from app.config import PROJECT_ROOT
from app.reproducers.generation import bulk, reproducer, verification
from app.reproducers.generation.calls import DIRECT_STATE_NOTE
from app.reproducers.generation.sites import Generated, Reason, SiteSpec, Skipped
from app.reproducers.harness import GuardedSite, bare, constructed, fix_scenario
from app.upstreams import torch as torch_upstream
from tests.helpers import generated as helper

DIRECT_STATE_SOURCE = """
class Pool:
    def __init__(self, device):
        self.device = device
        self.capacity = 0

    def reserve(self, size):
        if size > self.capacity:
            raise ValueError(f"size {size} is over the capacity {self.capacity}")
        return size
"""
LOCAL_SOURCE = """
def split(total, parts):
    each = total // parts
    if each < 1:
        raise ValueError("too many parts")
    return each
"""

CALLED_SOURCE = """
def split(total, parts):
    each = measure(total, parts)
    if each < 1:
        raise ValueError("too many parts")
"""

OBJECTS_SOURCE = """
class Parallel:
    size = 1
    pipeline = 1


class Model:
    def verify(self, parallel: Parallel):
        heads = self.arch.heads
        size = parallel.size
        if parallel.pipeline > 1:
            return None
        if heads % size != 0:
            raise ValueError(f"heads ({heads}) must be divisible by size ({size})")
        return heads // size
"""

DEFAULTED_SOURCE = """
class Scheduler:
    tokens = None
    budget = 0


class Engine:
    draft: Scheduler | None = None
    scheduler: Scheduler

    def plan(self):
        if self.draft is not None:
            if self.scheduler.tokens is None:
                self.scheduler.tokens = self.scheduler.budget
            if self.scheduler.tokens <= 0:
                raise ValueError(f"tokens is {self.scheduler.tokens}")
        return self.scheduler.tokens
"""

UNGUARDED_SOURCE = """
def parse(name, mapper=None):
    if name.startswith("base."):
        name = name.replace("base.", "")
    parts = name.split(".")
    if parts[-1] == "weight" and len(parts) >= 2:
        return parts[-2]
    raise ValueError(f"{name} is unsupported")
"""

TYPED_SOURCE = """
def scale(values: list[float], factor, name: str):
    if not isinstance(factor, (int, float)):
        raise TypeError(f"factor must be a number, got {type(factor).__name__}")
    return [v * factor for v in values]
"""

CUDA_SOURCE = """
def pin(device: str, size: int):
    if device == "cuda":
        if size < 1:
            raise ValueError(f"size must be positive on CUDA, got {size}")
    return size
"""


def _site(line: int, function: str) -> SiteSpec:
    return SiteSpec("00000000000000aa", "ValueError", "demo", "1.0", "demo.pool", line, function)


def test_a_method_whose_state_the_constructor_does_not_take_sets_it_directly_and_says_so():
    made = reproducer.generate(_site(9, "reserve"), DIRECT_STATE_SOURCE, {})
    assert isinstance(made, Generated)
    assert made.direct_state
    assert DIRECT_STATE_NOTE in made.trigger_call
    assert "set_state(obj, 'capacity'" in made.script
    ast.parse(made.script)  # the script is Python
    # both calls pass the same `size` or differ only in what decides the guard
    trigger_size = int(made.trigger_call.split("reserve(size=")[1].rstrip(")"))
    fix_size = int(made.fix_call.split("reserve(size=")[1].rstrip(")"))
    assert trigger_size > 0 >= fix_size or trigger_size > fix_size


def _run(source: str, call: str) -> object:
    """What a rendered call returns on the source, or the error it raises."""
    namespace: dict = {}
    exec(source, namespace)
    try:
        return eval(call, namespace)
    except ValueError as error:
        return error


def test_a_guard_on_a_local_computed_from_parameters_reads_what_it_was_computed_from():
    made = reproducer.generate(_site(5, "split"), LOCAL_SOURCE, {})
    assert isinstance(made, Generated)
    assert "total // parts < 1" in made.script
    assert isinstance(_run(LOCAL_SOURCE, made.trigger_call), ValueError)
    assert _run(LOCAL_SOURCE, made.fix_call) >= 1


def test_a_guard_on_a_local_computed_by_a_call_gets_no_script_and_says_why():
    skipped = reproducer.generate(_site(5, "split"), CALLED_SOURCE, {})
    assert skipped == Skipped("00000000000000aa", Reason.COMPUTED)


def _scenario(made: Generated, name: str, module: object) -> object:
    """Run the script's trigger or fix scenario on a module made from the source."""
    namespace: dict = {}
    exec(made.script.split('if __name__ == "__main__":')[0], namespace)
    try:
        return namespace[name](module, "cpu")
    except ValueError as error:
        return error


def _module(source: str) -> object:
    module = types.ModuleType("demo.pool")
    exec(source, module.__dict__)
    return module


def test_attributes_of_other_objects_are_set_on_objects_made_without_init():
    """`heads % size` reads locals bound from `self.arch.heads` and `parallel.size`: the
    parameter's annotated class is made without its __init__, the unannotated attribute is a
    stand-in, and both say so."""
    made = reproducer.generate(_site(14, "verify"), OBJECTS_SOURCE, {})
    assert isinstance(made, Generated), made
    assert made.direct_state
    assert "bare(module.Parallel, size=" in made.script
    assert "types.SimpleNamespace(heads=" in made.script
    assert "made without their __init__" in made.script
    module = _module(OBJECTS_SOURCE)
    raised = _scenario(made, "trigger", module)
    assert isinstance(raised, ValueError)
    assert "must be divisible" in str(raised)
    assert isinstance(_scenario(made, "fix", module), int)


def test_a_value_the_function_sets_only_under_an_if_keeps_the_callers_when_it_is_not_taken():
    made = reproducer.generate(_site(16, "plan"), DEFAULTED_SOURCE, {})
    assert isinstance(made, Generated), made
    assert "bare(module.Scheduler, tokens=" in made.script
    assert "'draft', bare(module.Scheduler))" in made.script  # not None: an instance
    module = _module(DEFAULTED_SOURCE)
    assert isinstance(_scenario(made, "trigger", module), ValueError)
    assert _scenario(made, "fix", module) > 0


def test_a_raise_that_ends_the_function_is_guarded_by_the_return_before_it():
    made = reproducer.generate(_site(8, "parse"), UNGUARDED_SOURCE, {})
    assert isinstance(made, Generated), made
    assert "the last return before it" in made.script
    assert isinstance(_run(UNGUARDED_SOURCE, made.trigger_call), ValueError)
    assert isinstance(_run(UNGUARDED_SOURCE, made.fix_call), str)


def test_a_type_check_gets_a_value_of_another_type_and_arguments_it_does_not_read_plain_values():
    made = reproducer.generate(_site(4, "scale"), TYPED_SOURCE, {})
    assert isinstance(made, Generated)
    assert "values=[]" in made.trigger_call
    assert "name='errkb'" in made.trigger_call
    namespace: dict = {}
    exec(TYPED_SOURCE, namespace)
    with pytest.raises(TypeError, match="factor must be a number"):
        eval(made.trigger_call, namespace)
    assert eval(made.fix_call, namespace) == []


def test_a_site_behind_a_cuda_condition_is_generated_for_the_gpu_runner():
    made = reproducer.generate(_site(5, "pin"), CUDA_SOURCE, {})
    assert isinstance(made, Generated)
    assert made.devices == ("cuda",)
    assert "device='cuda'" in made.trigger_call
    assert verification.script_devices(made.script) == ("cuda",)
    assert "CUDA-only" in made.script
    plain = reproducer.generate(_site(4, "scale"), TYPED_SOURCE, {})
    assert verification.script_devices(plain.script) == ("cpu",)


CLASS_CHECK_SOURCE = """
import collections.abc
import fractions


class Node:
    pass


def visit(node, depth: int):
    if not isinstance(node, Node):
        raise TypeError(f"expected a Node, got {type(node).__name__}")
    return depth


def freeze(value):
    if isinstance(value, fractions.Fraction):
        raise ValueError("a fraction cannot be frozen")
    return value


def count(items):
    if not isinstance(items, collections.abc.Sized):
        raise TypeError("items has no length")
    return len(items)
"""


def _run_on_module(source: str, call: str, scope: dict | None = None) -> object:
    """What a rendered call returns with the source as the script's `module` (a class is
    reached as `module.Node`, an instance made by the harness's `bare`)."""
    module = types.ModuleType("demo.pool")
    exec(source, module.__dict__)
    try:
        return eval(call, {**module.__dict__, **(scope or {}), "module": module, "bare": bare})
    except (TypeError, ValueError, RuntimeError) as error:
        return error


def test_a_check_of_a_class_gets_an_instance_made_without_init_and_a_plain_value():
    made = reproducer.generate(_site(12, "visit"), CLASS_CHECK_SOURCE, {})
    assert isinstance(made, Generated), made
    assert "bare(module.Node)" in made.fix_call
    assert isinstance(_run_on_module(CLASS_CHECK_SOURCE, made.trigger_call), TypeError)
    assert _run_on_module(CLASS_CHECK_SOURCE, made.fix_call) == 0
    frozen = reproducer.generate(_site(18, "freeze"), CLASS_CHECK_SOURCE, {})
    assert isinstance(frozen, Generated), frozen
    assert "bare(module.fractions.Fraction)" in frozen.trigger_call
    assert isinstance(_run_on_module(CLASS_CHECK_SOURCE, frozen.trigger_call), ValueError)
    assert not isinstance(_run_on_module(CLASS_CHECK_SOURCE, frozen.fix_call), Exception)


def test_a_check_of_an_abstract_base_is_judged_on_plain_values():
    sized = reproducer.generate(_site(24, "count"), CLASS_CHECK_SOURCE, {})
    assert isinstance(sized, Generated), sized
    assert isinstance(_run_on_module(CLASS_CHECK_SOURCE, sized.trigger_call), TypeError)
    assert isinstance(_run_on_module(CLASS_CHECK_SOURCE, sized.fix_call), int)


OBJECT_TESTS_SOURCE = """
import torch
from typing import Sequence

STEP = "step"


def attach(optimizer, hook):
    if not hasattr(optimizer, STEP):
        raise TypeError("the optimizer has no step method")
    if not callable(hook):
        raise TypeError(f"hook must be callable, got {type(hook).__name__}")
    return hook


def cast(dtype):
    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"dtype must be a torch.dtype, got {dtype!r}")
    return dtype


def shape(size):
    if isinstance(size, complex) or not isinstance(size, (int, Sequence)):
        raise TypeError(f"size must be an int or a sequence, got {size!r}")
    return size
"""


@pytest.mark.parametrize(
    ("line", "function", "trigger_holds", "fix_holds"),
    [
        (10, "attach", "optimizer=", "types.SimpleNamespace(step=None)"),
        (12, "attach", "hook=", "hook=lambda *args, **kwargs: None"),
        (18, "cast", "dtype=", "dtype=torch.float32"),
        (24, "shape", "size=", "size="),
    ],
)
def test_hasattr_callable_and_dtype_checks_get_values_that_pass_and_fail_them(
    line, function, trigger_holds, fix_holds
):
    """`hasattr(x, name)` gets an object with the attribute, `callable(x)` a function,
    `isinstance(x, torch.dtype)` a dtype, `isinstance(x, complex)` a complex number; each
    run on the module raises for the trigger and passes the check for the fix."""
    torch = pytest.importorskip("torch")
    made = reproducer.generate(_site(line, function), OBJECT_TESTS_SOURCE, {})
    assert isinstance(made, Generated), made
    assert trigger_holds in made.trigger_call
    assert fix_holds in made.fix_call
    scope = {"torch": torch, "types": types}
    assert isinstance(_run_on_module(OBJECT_TESTS_SOURCE, made.trigger_call, scope), TypeError)
    fixed = _run_on_module(OBJECT_TESTS_SOURCE, made.fix_call, scope)
    assert not isinstance(fixed, Exception) or f"line {line}" not in str(fixed), fixed


CHECK_CALL_SOURCE = """
import torch


def pad(size: int, value):
    torch._check(
        size >= 0,
        lambda: f"size must be non-negative, got {size}",
    )
    return size
"""


def test_a_torch_check_call_is_reached_like_the_assert_it_stands_for():
    made = reproducer.generate(_site(6, "pad"), CHECK_CALL_SOURCE, {})
    assert isinstance(made, Generated), made
    assert "The torch._check call in pad" in made.script
    assert "assertion=True" in made.script
    error = _run_on_module(CHECK_CALL_SOURCE, made.trigger_call)
    assert isinstance(error, RuntimeError)
    assert "size must be non-negative" in str(error)
    assert _run_on_module(CHECK_CALL_SOURCE, made.fix_call) >= 0


class _Shape(abc.ABC):
    @abc.abstractmethod
    def area(self) -> float: ...


class _Sized:
    def __init__(self, size):
        self.size = size


def test_objects_are_made_for_abstract_classes_aliases_and_classes_that_take_arguments():
    shape = bare(_Shape, sides=3)
    assert isinstance(shape, _Shape)
    assert shape.sides == 3
    alias = bare(int | str, sides=4)
    assert alias.sides == 4
    assert constructed(_Sized).__dict__ == {}  # its constructor needs a size: made without it
    assert constructed(list) == []


BLOCK_SOURCE = """
import contextlib
def split(total, parts):
    with contextlib.suppress(KeyError):
        try:
            if parts > total:
                raise ValueError("too many parts")
        except TypeError:
            return None
    try:
        if parts < 0:
            raise ValueError("negative parts")
    except ValueError:
        return None
    return total // parts
"""


def test_a_raise_in_a_with_or_a_try_that_lets_it_through_is_reached_like_any_other():
    made = reproducer.generate(_site(7, "split"), BLOCK_SOURCE, {})
    assert isinstance(made, Generated), made
    assert isinstance(_run(BLOCK_SOURCE, made.trigger_call), ValueError)
    assert not isinstance(_run(BLOCK_SOURCE, made.fix_call), ValueError)
    caught = reproducer.generate(_site(12, "split"), BLOCK_SOURCE, {})
    assert caught == Skipped("00000000000000aa", Reason.IN_BLOCK)


def test_a_missing_source_is_a_reason_not_a_crash():
    assert reproducer.generate(_site(5, "split"), None, {}).reason is Reason.NO_SOURCE


@pytest.mark.network
def test_sampling_params_drafts_of_vllm_become_constructor_calls(settings, tmp_path):
    """The real drafts of vllm 0.33.0's sampling_params.py: the temperature check is
    reached through the public constructor with a negative temperature, its fix with one
    the check accepts."""
    engine = helper.harvested_store(settings, tmp_path, helper.VLLM_SAMPLING)
    made, figures = bulk.generate_scripts(engine, settings, paths=["vllm/sampling_params"])
    figure = figures["vllm-project/vllm"]
    assert figure.tried == figure.generated + sum(figure.reasons.values())
    assert figure.generated >= 10
    calls = {script.trigger_call: script for script in made}
    temperature = [c for c in calls if c.startswith("SamplingParams(temperature=")]
    assert temperature, sorted(calls)
    value = float(temperature[0].split("=")[1].rstrip(")"))
    fix = float(calls[temperature[0]].fix_call.split("=")[1].rstrip(")"))
    assert value < 0 <= fix
    assert not calls[temperature[0]].direct_state
    with Session(engine) as session:
        stored = bulk.stored_script(session, calls[temperature[0]].record_id)
    assert stored is not None
    assert stored.script == calls[temperature[0]].script


@pytest.mark.network
def test_torch_optimizers_get_their_params_from_the_upstream_module(settings, tmp_path):
    engine = helper.harvested_store(settings, tmp_path, helper.TORCH_SGD)
    made, _figures = bulk.generate_scripts(engine, settings, paths=["torch/optim/sgd"])
    learning_rate = [
        m for m in made if "lr=" in m.trigger_call and m.trigger_call.startswith("SGD")
    ]
    assert learning_rate
    assert torch_upstream.PROJECT.plain_values["params"] in learning_rate[0].trigger_call
    assert "import torch" in learning_rate[0].script


SETTLE_SOURCE = """
def settle(size):
    if size < 0:
        raise ValueError("size is negative")
    while True:
        size += 1
"""


def test_a_fix_holds_at_the_first_line_past_the_raise_whatever_the_function_does_next(tmp_path):
    path = tmp_path / "settle.py"
    path.write_text(SETTLE_SOURCE)
    module = types.ModuleType("settle")
    module.__file__ = str(path)
    exec(compile(SETTLE_SOURCE, str(path), "exec"), module.__dict__)
    site = GuardedSite(function="settle", raise_line=4, guard_lines=(3, 3))
    fix = fix_scenario(site, lambda module, _device: module.settle(1), "settle(size=1)")
    assert fix(module, "cpu") == {
        "call": "settle(size=1)",
        "guardRan": True,
        "raiseRan": False,
        "raisedAfterGuard": None,
    }
    trigger = fix_scenario(site, lambda module, _device: module.settle(-1), "settle(size=-1)")
    with pytest.raises(AssertionError, match="still raised: ValueError: size is negative"):
        trigger(module, "cpu")


NONE_READ_SOURCE = """
def exceeds(cache, limit: int):
    if cache.full():
        return True
    if limit < 0:
        raise ValueError("negative limit")
    return False


def maybe_exceeds(cache, limit: int):
    if cache is not None and cache.full():
        return True
    if limit < 0:
        raise ValueError("negative limit")
    return False
"""


def test_a_condition_that_reads_an_argument_given_none_refuses_the_site():
    refused = reproducer.generate(_site(6, "exceeds"), NONE_READ_SOURCE, {})
    assert refused == Skipped("00000000000000aa", Reason.NO_VALUE_READ)
    made = reproducer.generate(_site(14, "maybe_exceeds"), NONE_READ_SOURCE, {})
    assert isinstance(made, Generated), made
    assert isinstance(_run(NONE_READ_SOURCE, made.trigger_call), ValueError)


LOOP_SOURCE = """
def check_sizes(sizes):
    for size in sizes:
        if size < 0:
            raise ValueError(f"size {size} is negative")
    return sizes


def check_pairs(names, values):
    for index, (name, value) in enumerate(zip(names, values)):
        pass
    for name, value in zip(names, values):
        if value is None:
            raise ValueError(f"{name} has no value")
    return names


def refuse_any(options):
    for option in options:
        raise KeyError(option)
    return None
"""


def test_a_raise_in_a_for_loop_is_reached_on_the_loops_first_pass():
    sizes = reproducer.generate(_site(5, "check_sizes"), LOOP_SOURCE, {})
    assert isinstance(sizes, Generated), sizes
    assert isinstance(_run(LOOP_SOURCE, sizes.trigger_call), ValueError)
    assert not isinstance(_run(LOOP_SOURCE, sizes.fix_call), ValueError)
    pairs = reproducer.generate(_site(14, "check_pairs"), LOOP_SOURCE, {})
    assert isinstance(pairs, Generated), pairs
    assert isinstance(_run(LOOP_SOURCE, pairs.trigger_call), ValueError)
    assert not isinstance(_run(LOOP_SOURCE, pairs.fix_call), ValueError)
    every = reproducer.generate(_site(20, "refuse_any"), LOOP_SOURCE, {})
    assert isinstance(every, Generated), every
    assert "len(options) > 0" in every.script
    namespace: dict = {}
    exec(LOOP_SOURCE, namespace)
    with pytest.raises(KeyError):
        eval(every.trigger_call, namespace)
    assert eval(every.fix_call, namespace) is None


HELPER_SOURCE = """
import sys

if sys.version_info >= (3, 99):
    def has_bits(name):
        return False
else:
    def has_bits(name):
        return name == "LOAD_GLOBAL"


def create(name, target=None):
    if has_bits(name):
        if target is not None:
            raise RuntimeError("target cannot be specified")
    return name
"""


def test_a_one_line_helper_on_the_way_is_read_as_what_it_returns_on_this_interpreter():
    made = reproducer.generate(_site(15, "create"), HELPER_SOURCE, {})
    assert isinstance(made, Generated), made
    assert "name='LOAD_GLOBAL'" in made.trigger_call
    assert isinstance(_run_on_module(HELPER_SOURCE, made.trigger_call), RuntimeError)
    assert _run_on_module(HELPER_SOURCE, made.fix_call) == "LOAD_GLOBAL"


COUNTER_SOURCE = """
class Counter:
    def __init__(self, model):
        self.model = model
        self.calls = 0
        self.limit = 10

    def step(self, size):
        self.calls += 1
        if size > self.limit:
            raise ValueError(f"size {size} is over the limit {self.limit}")
        return self.calls
"""


def test_an_object_made_without_init_gets_the_literal_attributes_init_sets():
    made = reproducer.generate(_site(11, "step"), COUNTER_SOURCE, {})
    assert isinstance(made, Generated), made
    assert "constructed(module.Counter, calls=0, limit=10)" in made.script
    module, scenarios = _scenarios_on(COUNTER_SOURCE, made)
    with pytest.raises(ValueError, match="is over the limit"):
        scenarios["trigger"](module, "cpu")
    assert scenarios["fix"](module, "cpu") == 1


def _scenarios_on(source: str, made: Generated) -> tuple[types.ModuleType, dict]:
    """A module made of the source, and the script's scenarios to run on it."""
    module = types.ModuleType("demo.pool")
    exec(source, module.__dict__)
    scenarios: dict = {"__name__": "generated"}
    exec(made.script, scenarios)
    return module, scenarios


STAND_IN_SOURCE = """
def writes(user, node):
    if user.op == "output":
        return False
    if user.target is None:
        raise ValueError("a user without a target")
    return True
"""


def test_a_condition_that_reads_what_a_stand_in_lacks_refuses_the_site():
    refused = reproducer.generate(_site(6, "writes"), STAND_IN_SOURCE, {})
    assert refused == Skipped("00000000000000aa", Reason.NO_VALUE_READ)


HOOK_SOURCE = """
class Debugger:
    def __init__(self, model, limit=10):
        self.model = model
        self.limit = limit
        self.seen = []

    def hook(self, module, size):
        if module == self.model:
            self.seen.append(size)
        if size > self.limit:
            raise ValueError(f"size {size} is over the limit {self.limit}")

    def check(self, size):
        if size > self.limit:
            raise ValueError(f"size {size} is over the limit {self.limit}")
        return self.model


class Quiet:
    def __init__(self, model=None):
        self.model = model
        self.limit = 10

    def hook(self, module, size):
        if module == self.model:
            return
        if size > self.limit:
            raise ValueError(f"size {size} is over the limit {self.limit}")
"""


def test_a_method_that_reads_what_init_computes_before_its_guard_gets_no_script():
    """transformers' DebugUnderflowOverflow.forward_hook compares `module == self.model`
    before its guard: an object made without __init__ has no `model`, so the call would
    raise AttributeError before the site; a read after the raise is no obstacle."""
    refused = reproducer.generate(_site(12, "hook"), HOOK_SOURCE, {})
    assert refused == Skipped("00000000000000aa", Reason.UNSET_STATE)
    made = reproducer.generate(_site(16, "check"), HOOK_SOURCE, {})
    assert isinstance(made, Generated), made
    # an __init__ that needs no argument runs: the script's object has what it sets
    quiet = reproducer.generate(_site(29, "hook"), HOOK_SOURCE, {})
    assert isinstance(quiet, Generated), quiet


SETTER_SOURCE = """
class Model:
    @property
    def plan(self):
        return self._plan

    @plan.setter
    def plan(self, plan):
        if plan is None:
            self._plan = {}
            return
        if not isinstance(plan, dict):
            raise ValueError("Can only set a dictionary as `plan`")
        self._plan = plan
"""


def test_a_property_setter_is_reached_by_assigning_the_property():
    """transformers' `tp_plan` setter: called as a method, the property's getter would run
    instead; the script assigns the value, as callers do."""
    made = reproducer.generate(_site(13, "plan"), SETTER_SOURCE, {})
    assert isinstance(made, Generated), made
    assert ".plan = " in made.trigger_call
    _trigger_raises_and_fix_holds(SETTER_SOURCE, made, "Can only set a dictionary")


def _trigger_raises_and_fix_holds(source: str, made: Generated, message: str) -> None:
    """The script's trigger raises the site's ValueError on a module made of the source, and
    its fix runs without it."""
    module, scenarios = _scenarios_on(source, made)
    with pytest.raises(ValueError, match=message):
        scenarios["trigger"](module, "cpu")
    scenarios["fix"](module, "cpu")


TENSOR_SOURCE = """
import torch
from torch import Tensor


def dropout1d(input: Tensor, p: float = 0.5) -> Tensor:
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise ValueError(f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input")
    return input


def scale(x, factor=2):
    if x.ndim > 0 and x.dtype in (torch.half, torch.bfloat16):
        raise ValueError(f"scale does not take {x.dtype}")
    return x * factor


def pair(a: Tensor, b: Tensor):
    if a.shape[0] != b.shape[0]:
        raise ValueError("a and b must have the same first size")
    return a + b


def gradient(x: Tensor):
    if x.grad is None:
        raise ValueError("no gradient")
"""


@pytest.mark.parametrize(
    ("line", "function", "message"),
    [(9, "dropout1d", "Expected 2D or 3D"), (15, "scale", "does not take"), (21, "pair", "same")],
    ids=str,
)
def test_a_guard_on_a_tensors_rank_dtype_or_shape_gets_tensors_that_reach_and_miss_it(
    line: int, function: str, message: str
):
    """torch's own checks (`input.dim()`, `x.dtype in (torch.half, ...)`, `a.shape[0]`): the
    search picks tensors by shape and dtype, and the script builds them with torch."""
    made = reproducer.generate(_site(line, function), TENSOR_SOURCE, {})
    assert isinstance(made, Generated), made
    assert "torch.zeros(" in made.trigger_call
    assert "import torch" in made.script
    _trigger_raises_and_fix_holds(TENSOR_SOURCE, made, message)


def test_a_tensor_attribute_the_search_cannot_choose_gets_no_script_and_says_why():
    skipped = reproducer.generate(_site(27, "gradient"), TENSOR_SOURCE, {})
    assert skipped == Skipped("00000000000000aa", Reason.COMPUTED)


@pytest.mark.parametrize("argument", ["x", "x: Tensor"])
def test_a_check_of_the_tensor_class_gets_a_tensor_and_a_plain_value(argument: str):
    """`if not isinstance(x, torch.Tensor): raise TypeError(...)`: a plain value triggers
    it, a tensor the script builds fixes it, whether or not `x` is annotated as a tensor."""
    source = TENSOR_SOURCE + dedent(
        f"""
        def as_tensor({argument}):
            if not isinstance(x, torch.Tensor):
                raise ValueError(f"expected a tensor, got {{type(x)}}")
            return x
        """
    )
    line = source.splitlines().index("    if not isinstance(x, torch.Tensor):") + 2
    made = reproducer.generate(_site(line, "as_tensor"), source, {})
    assert isinstance(made, Generated), made
    assert "torch.zeros(" in made.fix_call
    _trigger_raises_and_fix_holds(source, made, "expected a tensor")


SET_SOURCE = """
def validate_namespace(ns: str):
    if ns in {"prim", "prims", "aten", "torch", "c10"}:
        raise ValueError(f"{ns} is a reserved namespace")
    return ns
"""


def test_candidates_from_a_set_are_tried_in_the_same_order_under_any_hash_seed():
    """A set literal's order is its members' string hashes, seeded per process: the script
    made for a site must not change with the seed (a rerun would verify another script)."""
    program = (
        "from app.reproducers.generation import reproducer\n"
        "from app.reproducers.generation.sites import SiteSpec\n"
        "site = SiteSpec('00000000000000aa', 'ValueError', 'demo', '1.0', 'demo.ns', 4,"
        " 'validate_namespace')\n"
        f"made = reproducer.generate(site, {SET_SOURCE!r}, {{}})\n"
        "print(made.trigger_call, made.fix_call)\n"
    )
    calls = {
        subprocess.run(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
            cwd=PROJECT_ROOT,
        ).stdout
        for seed in range(6)
    }
    assert len(calls) == 1, calls
    assert calls.pop().startswith("validate_namespace(ns='aten')")  # first in sorted order
