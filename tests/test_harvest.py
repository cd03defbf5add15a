"""Harvest: each message form and skip reason, then the whole of the installed torch package.

The torch tests run the harvester on the real sources and then trigger real torch errors on
the CPU: the message a user sees must be matched by the draft at the raising frame's line.
"""

import json
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent
from types import ModuleType

import jsonschema
import pytest
import re2
from sqlmodel import select

from app.config import PROJECT_ROOT, Settings
from app.harvest import Draft, HarvestResult, RaiseSite, SkipReason, extract_raises, harvest_tree
from app.harvest import drafts as stored_drafts
from app.harvest.collect import extract_module
from app.harvest.resolve import ReleaseMessages, resolve_sites
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.patterns import PatternError, check_pattern
from app.records.site_keys import matched_by_location
from app.store.tables import Record
from tests.helpers import real_pastes

TORCH_REF = "v2.13.0"
ANALYZED_AT = "2026-09-01T12:00:00.000Z"
SCHEMA = json.loads((PROJECT_ROOT / "data" / "record.schema.json").read_text())
RECORD_KEYS = [
    "id", "repo", "slug", "errorCode", "errorMessage", "messagePattern", "errorType",
    "errorClass", "httpStatus", "severity", "filePath", "lineNumber", "sourceCode",
    "sourceCodeStart", "sourceCodeEnd", "githubUrl", "documentation", "triggerScenarios",
    "commonSituations", "solutions", "exampleFix", "handlingStrategy", "validationCode",
    "typeGuard", "tryCatchPattern", "preventionTips", "tags", "backgroundTag", "analyzedSha",
    "analyzedAt", "schemaVersion",
]  # fmt: skip
PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _only(source: str) -> RaiseSite:
    """The single raise site of a snippet."""
    (site,) = extract_raises(dedent(source))
    return site


def _template(source: str) -> str:
    site = _only(source)
    assert site.message is not None, site.skip
    return site.message.template


def _harvest_torch(site_packages: Path, package_dir: str = "torch") -> HarvestResult:
    return harvest_tree(
        site_packages,
        repo="pytorch/pytorch",
        ref=TORCH_REF,
        analyzed_at=ANALYZED_AT,
        package_dir=package_dir,
    )


def _seed_slug(message: str) -> str:
    """The rule the seeds' slugs follow."""
    return re.sub(r"[^a-z0-9]+", "-", message[:50].lower()).strip("-")


def _render(template: str, names: tuple[str, ...], values: dict[str, str]) -> str:
    """Substitute the placeholders, in order, leaving other braces of the text alone."""
    pending = list(names)

    def substitute(match: re.Match[str]) -> str:
        if pending and match[1] == pending[0]:
            return values[pending.pop(0)]
        return match[0]

    rendered = PLACEHOLDER.sub(substitute, template)
    assert not pending, template
    return rendered


# --- message forms -------------------------------------------------------------------------


def test_implicit_concatenation_of_literals_gives_seed_001() -> None:
    site = _only(
        """
        if occupied_size_new > self.data_buffer_size:
            raise MemoryError(
                "Not enough space in the data buffer, "
                "try calling free_buf() to free up space"
            )
        """
    )
    assert site.message is not None
    assert site.line == 3  # the `raise` line, as seed 001 gives it
    assert site.error_class == "MemoryError"
    assert site.message.template == (
        "Not enough space in the data buffer, try calling free_buf() to free up space"
    )
    assert site.message.pattern == (  # seed 001's messagePattern, character for character
        r"Not enough space in the data buffer, try calling free_buf\(\) to free up space"
    )
    assert site.message.placeholders == ()


def test_fstring_split_over_lines_gives_seed_002() -> None:
    site = _only(
        """
        raise RuntimeError(
            "CUDA VMM pool has no occupied slice at control offset "
            f"{control_offset}"
        )
        """
    )
    assert site.message is not None
    assert site.message.template == (
        "CUDA VMM pool has no occupied slice at control offset {control_offset}"
    )
    assert site.message.pattern == (
        "CUDA VMM pool has no occupied slice at control offset (?P<control_offset>(?s:.+?))"
    )


def test_fstring_names_placeholders_after_expressions() -> None:
    template = _template(
        'raise ValueError(f"got {x:.2f} of {self.size!r} in {len(buffers)} at {shape[0]}, '
        'again {x} and {type(x).__name__}")'
    )
    assert template == (
        "got {x} of {size} in {len_buffers} at {shape_0}, again {x_2} and {type_x_name}"
    )


def test_format_method_positional_automatic_and_keyword_fields() -> None:
    assert _template('raise ValueError("got {} of {}".format(n, self.m))') == "got {n} of {m}"
    assert _template('raise ValueError("got {1} of {0}".format(n, m))') == "got {m} of {n}"
    assert _template('raise ValueError("bad {name!r:>10} {{x}}".format(name=v))') == (
        "bad {name} {x}"  # {{x}} is the literal text {x}
    )
    assert _template('raise ValueError("dtype {0.dtype}".format(t))') == "dtype {t_dtype}"


def test_percent_formatting_tuple_single_and_mapping() -> None:
    assert _template('raise ValueError("got %d of %.2f" % (n, ratio))') == "got {n} of {ratio}"
    assert _template('raise ValueError("got %s, 100%%" % value)') == "got {value}, 100%"
    assert _template('raise ValueError("key %(key)s missing" % locals())') == "key {key} missing"
    assert _only('raise ValueError("got %s and %s" % (a,))').skip == SkipReason.DYNAMIC_MESSAGE


def test_concatenation_makes_other_operands_placeholders() -> None:
    assert _template('raise KeyError("no key " + str(key) + " in store")') == (
        "no key {str_key} in store"
    )
    assert _template('raise KeyError("prefix: " + f"{a}" + "x {}".format(b))') == (
        "prefix: {a}x {b}"
    )


def test_vllm_validation_error_keywords_are_an_optional_suffix_of_the_pattern() -> None:
    site = _only(
        """
        if self.max_tokens < 1:
            raise VLLMValidationError(
                f"max_tokens must be at least 1, got {self.max_tokens}.",
                parameter="max_tokens",
                value=self.max_tokens,
            )
        """
    )
    assert site.message is not None
    pattern = re.compile(site.message.pattern)
    # str() of the error appends the keywords given, a None value left out; a server's
    # answer shows the message alone
    for message in (
        "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)",
        "max_tokens must be at least 1, got -1. (parameter=max_tokens)",
        "max_tokens must be at least 1, got -344.",
    ):
        assert pattern.fullmatch(message), message
    assert not pattern.fullmatch("max_tokens must be at least 1, got 0. (other)")
    # the same when the class's own __init__ builds the message (as in vllm/exceptions.py)
    sites = extract_raises(
        dedent(
            """
            class VLLMValidationError(ValueError):
                def __init__(self, message, *, parameter=None, value=None):
                    super().__init__(message)

            def check(n):
                if n < 1:
                    raise VLLMValidationError(f"n must be at least 1, got {n}.", parameter="n")
            """
        )
    )
    (resolved,) = [site for site in sites if site.function == "check"]
    assert resolved.message is not None
    assert re.fullmatch(resolved.message.pattern, "n must be at least 1, got 0. (parameter=n)")


def test_local_variable_assigned_before_the_raise() -> None:
    site = _only(
        """
        def check(n):
            msg = f"bad size {n}"
            msg += ", expected 4"
            if n != 4:
                raise ValueError(msg)
        """
    )
    assert site.message is not None
    assert site.message.template == "bad size {n}, expected 4"
    assert _template('text = "got {} items"\nraise ValueError(text.format(n))') == "got {n} items"


def test_local_variable_rebound_in_a_nested_block_is_dynamic() -> None:
    site = _only(
        """
        def check(n, detail):
            msg = "bad size"
            if n > 10:
                msg = detail
            raise ValueError(msg)
        """
    )
    assert site.skip == SkipReason.DYNAMIC_MESSAGE


def test_a_tail_an_if_or_a_loop_adds_is_optional_in_the_pattern() -> None:
    """SGLang's pool configurator builds "Not enough memory..." in `msg` and adds
    the current value only when it is set; a loop may add its tail any number of times."""
    site = _only(
        """
        def __post_init__(self):
            if self.max_total_num_tokens <= 0:
                msg = "Not enough memory. Please try to increase --mem-fraction-static."
                if self.mem_fraction_static is not None:
                    msg += f" Current value: mem_fraction_static={self.mem_fraction_static}"
                raise RuntimeError(msg)
        """
    )
    assert site.message is not None
    assert site.message.placeholders == ("mem_fraction_static",)
    assert site.message.template == (
        "Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static={mem_fraction_static}"
    )
    pattern = re.compile(site.message.pattern)
    bare = "Not enough memory. Please try to increase --mem-fraction-static."
    assert pattern.fullmatch(bare)["mem_fraction_static"] is None
    assert pattern.fullmatch(bare + " Current value: mem_fraction_static=0.88")[1] == "0.88"
    assert not pattern.fullmatch(bare + " Something else")
    assert re2.compile(site.message.pattern).fullmatch(bare)
    looped = _only(
        """
        def check(names):
            msg = "unknown names:"
            for name in names:
                msg += f" {name}"
            with lock:
                msg += "."
            raise KeyError(msg)
        """
    )
    assert looped.message is not None
    assert re.fullmatch(looped.message.pattern, "unknown names: a b c.")
    assert re.fullmatch(looped.message.pattern, "unknown names:.")


def test_branches_that_add_different_tails_or_leave_early_are_told_apart() -> None:
    sites = extract_raises(
        dedent(
            """
            def either(strict):
                msg = "bad config"
                if strict:
                    msg += " (strict)"
                else:
                    msg += " (lenient)"
                raise ValueError(msg)
            def both(strict):
                msg = "bad config"
                if strict:
                    msg += ": see the docs"
                else:
                    msg += ": see the docs"
                raise ValueError(msg)
            def early(strict):
                msg = "bad config"
                if strict:
                    msg += " (strict)"
                    raise KeyError(msg)
                raise ValueError(msg)
            """
        )
    )
    templates = [site.message.template if site.message else site.skip for site in sites]
    assert templates == [
        SkipReason.DYNAMIC_MESSAGE,  # two different tails: which one is unknown
        "bad config: see the docs",  # every branch adds it: not optional
        "bad config (strict)",
        "bad config",  # the branch that added the tail left by its raise
    ]


def test_a_message_rebound_by_a_loop_target_a_with_or_a_walrus_is_dynamic() -> None:
    sites = extract_raises(
        dedent(
            """
            def loop(items):
                msg = "bad items given"
                for msg in items:
                    pass
                raise ValueError(msg)
            def opened(path):
                msg = "cannot open the file"
                with open(path) as msg:
                    pass
                raise ValueError(msg)
            def walrus(read):
                msg = "cannot read the file"
                if (msg := read()):
                    pass
                raise ValueError(msg)
            """
        )
    )
    assert [site.skip for site in sites] == [SkipReason.DYNAMIC_MESSAGE] * 3


def test_calls_of_a_raising_helper_are_raise_sites_with_the_message_they_pass() -> None:
    """SGLang's invariant checker passes "... memory leak detected! ..." to
    `raise_error_or_warn(obj, strict, counter, message)`, which raises `ValueError(message)`
    in another module; each call is a raise site of the message it passes."""
    helper = extract_module(
        dedent(
            """
            def raise_error_or_warn(obj, strict, counter_name, message, log_interval=1000):
                if strict:
                    raise ValueError(message)
                else:
                    logger.warning(message)
            """
        ),
        "sglang/srt/utils/common.py",
    )
    checker = extract_module(
        dedent(
            """
            from sglang.srt.utils.common import raise_error_or_warn
            class InvariantChecker:
                def _report_leak(self, pool_name, token_msg):
                    msg = f"{pool_name} memory leak detected! {token_msg}"
                    raise_error_or_warn(self, strict(), "count_memory_leak_warnings", msg)
                def _check_pages(self, stale):
                    if stale.numel() > 0:
                        self._fail(f"KV page use-after-free: {stale.numel()} owner page refs")
                    raise_error_or_warn(self, strict(), "counter", message=dynamic_text)
                    logger.warning(f"{stale} is not a raise")
                def _fail(self, reason):
                    raise RuntimeError(reason)
            """
        ),
        "sglang/srt/managers/scheduler_components/invariant_checker.py",
    )
    release = ReleaseMessages([helper, checker])
    calls = [site for site in resolve_sites(checker, release) if site.kind == "call"]
    assert [(site.line, site.error_class, site.function) for site in calls] == [
        (6, "ValueError", "_report_leak"),
        (9, "RuntimeError", "_check_pages"),
    ]
    leak, page = (site.message for site in calls)
    assert leak is not None
    assert page is not None
    assert leak.template == "{pool_name} memory leak detected! {token_msg}"
    real = "token_to_kv_pool_allocator memory leak detected! available_size=100, total=128"
    assert re.fullmatch(leak.pattern, real)
    assert page.template == "KV page use-after-free: {stale_numel} owner page refs"
    assert calls[1].guard == "stale.numel() > 0"
    (own,) = resolve_sites(helper, release)
    assert own.skip == SkipReason.DYNAMIC_MESSAGE  # the helper's raise: found by its site


def test_local_variable_of_another_function_or_parameter_is_dynamic() -> None:
    sites = extract_raises(
        dedent(
            """
            def elsewhere():
                note = "a message of another function"
            def first(msg2):
                raise ValueError(note)
            def second(msg2):
                raise ValueError(msg2)
            """
        )
    )
    assert [site.skip for site in sites] == [SkipReason.DYNAMIC_MESSAGE] * 2


def test_module_level_constants_and_their_format_at_the_raise() -> None:
    """torch's default_collate raises a module constant's `.format(...)`."""
    sites = extract_raises(
        dedent(
            """
            def collate(batch):
                raise TypeError(ERR_FORMAT.format(type(batch)))
            def check(n):
                raise ValueError(PLAIN % n)
            ERR_FORMAT = (
                "default_collate: batch must contain tensors; found {}"
            )
            PLAIN = "bad size %d"
            REBOUND = "first"
            REBOUND = "second"
            def rebound():
                raise ValueError(REBOUND)
            """
        )
    )
    assert [site.message.template if site.message else site.skip for site in sites] == [
        "default_collate: batch must contain tensors; found {type_batch}",
        "bad size {n}",
        SkipReason.DYNAMIC_MESSAGE,
    ]


def test_conditional_expression_is_dynamic() -> None:
    site = _only('raise ValueError("too big" if n > 1 else "too small")')
    assert site.skip == SkipReason.DYNAMIC_MESSAGE


def test_first_argument_is_the_message() -> None:
    assert _template('raise ValueError("wrong shape", shape)') == "wrong shape"


def test_newlines_and_metacharacters_are_escaped() -> None:
    site = _only(r'raise ValueError(f"bad [x] (y)?\n\tvalue: {v}.*")')
    assert site.message is not None
    assert site.message.pattern == r"bad \[x\] \(y\)\?\n\tvalue: (?P<v>(?s:.+?))\.\*"
    value = "1\n2"  # values may span lines, like a tensor's repr
    for engine in (re, re2):
        match = engine.fullmatch(site.message.pattern, f"bad [x] (y)?\n\tvalue: {value}.*")
        assert match
        assert match.group("v") == value


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("raise", SkipReason.RERAISE),
        ("raise e", SkipReason.RERAISE_VARIABLE),
        ("raise NotImplementedError", SkipReason.NO_MESSAGE),
        ("raise errors.Custom", SkipReason.NO_MESSAGE),
        ("raise ValueError()", SkipReason.NO_MESSAGE),
        ("raise KeyError(key)", SkipReason.DYNAMIC_MESSAGE),
        ("raise Custom(msg=f'bad {x}')", SkipReason.DYNAMIC_MESSAGE),
        ("raise ValueError(f'{x}: {y}')", SkipReason.NO_LITERAL_TEXT),
        ("raise ValueError('bad')", SkipReason.NO_LITERAL_TEXT),
        ("raise ERRORS[kind]('a known message')", SkipReason.DYNAMIC_CLASS),
    ],
)
def test_skip_reasons(source: str, reason: SkipReason) -> None:
    site = _only(source)
    assert (site.message, site.skip) == (None, reason)


def test_enclosing_class_function_and_qualified_name() -> None:
    sites = extract_raises(
        dedent(
            """
            raise ImportError("module level failure")
            class Pool:
                raise TypeError("class body failure")
                def free(self):
                    def inner():
                        raise RuntimeError("nested function failure")
                    raise RuntimeError("method failure")
            async def fetch():
                raise torch.OutOfMemoryError("coroutine failure")
            """
        )
    )
    found = [(s.qualname, s.function, s.class_name, s.error_class, s.line) for s in sites]
    assert found == [
        (None, None, None, "ImportError", 2),
        ("Pool", None, "Pool", "TypeError", 4),
        ("Pool.free.<locals>.inner", "inner", "Pool", "RuntimeError", 7),
        ("Pool.free", "free", "Pool", "RuntimeError", 8),
        ("fetch", "fetch", None, "torch.OutOfMemoryError", 10),  # the class as written
    ]


# --- messages built elsewhere, asserts, checks, guards ---------------------------


def test_factories_are_followed_through_nested_scopes_and_factories() -> None:
    """torch's env:// rendezvous raises `_env_error("RANK")`, built by two factories."""
    sites = extract_raises(
        dedent(
            """
            def _rendezvous_error(msg):
                return ValueError("Error initializing torch.distributed using " + msg)

            def _tcp_handler(url):
                def _error(msg):
                    return _rendezvous_error("tcp:// rendezvous: " + msg)
                raise _error("port number missing")

            def _env_handler(url):
                def _error(msg):
                    return _rendezvous_error("env:// rendezvous: " + msg)
                def _env_error(var):
                    return _error(f"environment variable {var} expected, but not set")
                def _get_env_or_raise(env_var):
                    raise _env_error(env_var)
                raise _env_error("RANK")

            class Pool:
                def _full(self, size):
                    return MemoryError(f"pool full: {size} bytes asked")
                def put(self, size):
                    raise self._full(size)

            def _unknown(kind):
                return make_error(kind)
            raise _unknown("x")
            """
        )
    )
    prefix = "Error initializing torch.distributed using "
    env = prefix + "env:// rendezvous: environment variable "
    found = [(s.error_class, s.message.template if s.message else s.skip) for s in sites]
    assert found == [
        ("ValueError", prefix + "tcp:// rendezvous: port number missing"),
        ("ValueError", env + "{env_var} expected, but not set"),
        ("ValueError", env + "RANK expected, but not set"),
        ("MemoryError", "pool full: {size} bytes asked"),
        (None, SkipReason.DYNAMIC_CLASS),
    ]


def test_classes_that_build_their_message_in_init_even_in_subclasses() -> None:
    sites = extract_raises(
        dedent(
            """
            class InvalidBackend(Exception):
                def __init__(self, name):
                    super().__init__(f"Invalid backend: {name!r}, see list_backends()")

            class WorseBackend(InvalidBackend):
                pass

            class Legacy(Exception):
                def __init__(self, what, why="unknown"):
                    Exception.__init__(self, "legacy %s failed: %s" % (what, why))

            def lookup(compiler_fn):
                raise InvalidBackend(name=compiler_fn)

            def other():
                raise WorseBackend("eager2")

            def old():
                raise Legacy("load")
            """
        )
    )
    # A `!r` field stays a placeholder: the repr of a bound literal is not its text.
    assert [(s.error_class, s.message.template) for s in sites] == [
        ("InvalidBackend", "Invalid backend: {name}, see list_backends()"),
        ("WorseBackend", "Invalid backend: {name}, see list_backends()"),
        ("Legacy", "legacy {what} failed: {why}"),
    ]


def test_asserts_and_torch_checks_are_raise_sites() -> None:
    sites = extract_raises(
        dedent(
            """
            def f(x, n):
                assert x is not None, f"x must be given for {n}"
                assert n > 0
                torch._check(n < 8, lambda: f"n too large: {n}")
                torch._check_index(n >= 0, lambda: "negative index")
                torch._check(n != 3)
            """
        )
    )
    found = [(s.kind, s.error_class, s.message and s.message.template, s.guard) for s in sites]
    assert found == [
        ("assert", "AssertionError", "x must be given for {n}", "x is None"),
        ("check", "RuntimeError", "n too large: {n}", "n >= 8"),
        ("check", "IndexError", "negative index", "n < 0"),
        ("assert", "AssertionError", None, "n <= 0"),  # no message: found by its line, last
    ]
    assert sites[-1].skip == SkipReason.BARE_ASSERT


def test_guard_is_the_path_of_if_tests_inside_the_function() -> None:
    """CopyBufferAllocator.free_buffer raises when the count is short."""
    sites = extract_raises(
        dedent(
            """
            class CopyBufferAllocator:
                def free_buffer(self, buffers):
                    \"\"\"Return buffers to the pool.

                    More text that is not the first paragraph.\"\"\"
                    if not buffers:
                        return
                    if self._inuse_count >= len(buffers):
                        self._inuse_count -= len(buffers)
                    else:
                        raise RuntimeError("Attempted to free more buffers than allocated")

            def pick(items, mode):
                for item in items:
                    if item.ok:
                        continue
                    if mode == "a" or mode == "b":
                        if item.size > 3:
                            raise ValueError("item too large")
                    elif mode is None:
                        raise ValueError("no mode")
                    raise ValueError("bad item")
                try:
                    load(items)
                except (KeyError, IndexError) as error:
                    raise LookupError("could not load the items") from error
            """
        )
    )
    assert [(s.guard, s.translates) for s in sites] == [
        ("self._inuse_count < len(buffers)", ()),
        ("(mode == 'a' or mode == 'b') and item.size > 3", ()),
        ("not (mode == 'a' or mode == 'b') and mode is None", ()),
        ("not item.ok", ()),
        (None, ("KeyError", "IndexError")),
    ]
    assert sites[0].docstring == "Return buffers to the pool."
    assert (sites[0].function, sites[0].class_name) == ("free_buffer", "CopyBufferAllocator")


def test_a_dynamic_message_gets_a_draft_found_by_its_site(tmp_path: Path) -> None:
    _write(
        tmp_path / "pkg" / "load.py",
        """
        def load(data):
            try:
                return parse(data)
            except Exception as error:
                raise UnpicklingError(describe(str(error))) from None
        def pick(kind):
            raise ERRORS[kind](f"{kind}")
        """,
    )
    result = harvest_tree(
        tmp_path, repo="example/pkg", ref="v1", analyzed_at=ANALYZED_AT, package_dir="pkg"
    )
    located = [d.record for d in result.drafts if d.located]
    assert [(r["errorClass"], r["errorMessage"], r["messagePattern"]) for r in located] == [
        ("UnpicklingError", "{describe_str_error}", "(?P<describe_str_error>(?s:.+?))"),
        ("Exception", "{f_kind}", "(?P<f_kind>(?s:.+?))"),
    ]
    assert result.located == 2
    assert not result.skipped


def test_an_assert_without_a_message_gets_a_draft_found_by_its_line(tmp_path: Path) -> None:
    """`assert cond` raises an AssertionError with no message, so only its line can
    tell which one failed; the draft's message is one variable part named after the asserted
    expression, its guard is the expression's failure, and the ids of the module's other
    sites stay what they were before such asserts had drafts."""
    source = """
        def load(blocks, n):
            assert n > 0
            if n > len(blocks):
                raise ValueError(f"cannot load {n} blocks")
            assert blocks[0] is not None and \\
                len(blocks) < 64
            assert blocks, "no blocks to load"
            raise ValueError(f"cannot load {n} blocks")
        """
    _write(tmp_path / "pkg" / "load.py", source)
    result = harvest_tree(
        tmp_path, repo="example/pkg", ref="v1", analyzed_at=ANALYZED_AT, package_dir="pkg"
    )
    records = [d.record for d in result.drafts]
    assert [(r["errorMessage"], r["lineNumber"]) for r in records] == [
        ("cannot load {n} blocks", 5),
        ("no blocks to load", 8),
        ("cannot load {n} blocks", 9),
        ("{n_0}", 3),
        ("{blocks_0_is_not_None_and_len_blo}", 6),
    ]
    asserted = records[-2:]
    assert [r["messagePattern"] for r in asserted] == [
        "(?P<n_0>(?s:.+?))",
        "(?P<blocks_0_is_not_None_and_len_blo>(?s:.+?))",
    ]
    assert all(matched_by_location(r["messagePattern"]) for r in asserted)
    guards = [d.site.guard for d in result.drafts[-2:] if d.site]
    assert guards == [
        "n <= 0",
        "n <= len(blocks) and (not (blocks[0] is not None and len(blocks) < 64))",
    ]
    assert result.located == 2

    without = source.replace("            assert n > 0\n", "            pass\n").replace(
        "            assert blocks[0] is not None and \\\n                len(blocks) < 64\n",
        "            pass\n            pass\n",
    )
    assert without.count("assert") == 1
    _write(tmp_path / "pkg" / "load.py", without)
    before = harvest_tree(
        tmp_path, repo="example/pkg", ref="v1", analyzed_at=ANALYZED_AT, package_dir="pkg"
    )
    assert [d.record["id"] for d in before.drafts] == [r["id"] for r in records[:3]]


def test_a_message_joined_from_pieces_matches_any_of_them() -> None:
    """vLLM's lora/peft_helper.py appends a sentence per unsupported feature to a
    list (some of them in a method that returns it) and raises `" ".join(...)` of it. Any of
    them may come first, so nothing is in every message: each piece is a message of its own
    (the site's drafts), which is what a user with one unsupported feature sees."""
    (site,) = extract_raises(
        dedent(
            """
            class PEFTHelper:
                def _validate_features(self):
                    error_msg = []
                    if self.alora_invocation_tokens:
                        error_msg.append("vLLM does not support Activated LoRA (aLoRA).")
                    if self.use_qalora:
                        error_msg.append("vLLM does not support QALoRA.")
                    return error_msg

                def validate_legal(self, lora_config):
                    error_msg = self._validate_features()
                    max_rank = max([self.r, *self.rank_pattern.values()])
                    if max_rank > lora_config.max_lora_rank:
                        error_msg.append(
                            f"LoRA rank {max_rank} is greater than max_lora_rank"
                            f" {lora_config.max_lora_rank}."
                        )
                    if self.bias != "none":
                        error_msg.append("Adapter bias is not supported.")
                    if error_msg:
                        raise ValueError(f"{' '.join(error_msg)}")
            """
        )
    )
    assert site.message is not None, site.skip
    pieces = (site.message, *site.message.others)
    assert [piece.template for piece in pieces] == [
        "vLLM does not support Activated LoRA (aLoRA).",
        "vLLM does not support QALoRA.",
        "LoRA rank {max_rank} is greater than max_lora_rank {lora_config_max_lora_rank}.",
        "Adapter bias is not supported.",
    ]
    rank = pieces[2].pattern
    found = re2.fullmatch(rank, "LoRA rank 64 is greater than max_lora_rank 16.")
    assert found
    assert found["max_rank"] == "64"
    for piece in pieces:
        check_pattern(piece.pattern)


@pytest.mark.parametrize(
    ("source", "templates", "messages"),
    [
        (  # appended in a loop, joined with newlines after a heading
            """
            def check(fields):
                problems = []
                for name in fields:
                    problems.append(f"field {name} is not set")
                raise ValueError("invalid config:\\n" + "\\n".join(problems))
            """,
            ["invalid config:\nfield {name} is not set"],
            ["invalid config:\nfield a is not set"],
        ),
        (  # a list written out, extended under a condition: the first piece is always there
            """
            def check(x):
                parts = ["bad value", f"got {x!r}"]
                if x < 0:
                    parts.append("it must not be negative")
                raise ValueError(", ".join(parts))
            """,
            ["bad value, got {x}, it must not be negative"],
            ["bad value, got -1, it must not be negative", "bad value, got 3"],
        ),
    ],
    ids=["loop", "literal"],
)
def test_lists_of_pieces_built_in_a_loop_or_written_out(
    source: str, templates: list[str], messages: list[str]
) -> None:
    message = _only(source).message
    assert message is not None
    assert [piece.template for piece in (message, *message.others)] == templates
    for text in messages:
        assert re2.fullmatch(message.pattern, text), text


def test_a_list_used_as_a_message_or_changed_elsewhere_is_not_joined() -> None:
    assert (
        _only(
            """
        def f(parts):
            parts.append("not ours")
            raise ValueError(" ".join(parts))
        """
        ).skip
        == SkipReason.DYNAMIC_MESSAGE
    )
    assert (
        _only(
            """
        def f():
            parts = []
            parts.append("too many blocks")
            raise ValueError(f"{parts}")
        """
        ).skip
        == SkipReason.NO_LITERAL_TEXT
    )


POOL_ERRORS = """
def fail(message):
    raise RuntimeError(message)
"""
POOL_ALLOC = """
from pool.errors import fail


def take(n, free):
    if n > free:
        fail(f"cannot take {n} blocks, only {free} free")
    return n


def give(n):
    if n < 0:
        fail("cannot give back a negative number of blocks")
"""


def test_a_helper_raising_any_message_never_beats_the_record_of_its_text(
    session, settings: Settings, tmp_path: Path
) -> None:
    """`fail(message)` raises whatever it is given, so its own draft is `{message}`
    alone, found by its raise line, which is the innermost frame of every error it raises;
    the record of the text its caller passed must still come first."""
    root = tmp_path / "src"
    _write(root / "pool" / "__init__.py", "")
    _write(root / "pool" / "errors.py", POOL_ERRORS)
    _write(root / "pool" / "alloc.py", POOL_ALLOC)
    release = stored_drafts.resolve_release(str(root), repo="example/pool", ref="v1")
    stored_drafts.harvest_release(session, release)
    session.commit()
    run = subprocess.run(
        [sys.executable, "-c", "from pool.alloc import take; take(5, 2)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert run.stderr.rstrip().endswith("RuntimeError: cannot take 5 blocks, only 2 free")
    matcher = Matcher(session.get_bind(), settings.cache_dir, 1 << 20)
    helpers = []
    for paste in (run.stderr, run.stderr.rstrip().rsplit("\n", 1)[-1]):
        matches = match_text(matcher, session, paste).matches
        top = matches[0]
        assert top.record.error_message == "cannot take {n} blocks, only {free} free", paste
        assert (top.record.file_path, top.record.line_number) == ("pool/alloc.py", 7)
        assert top.captures == {"n": "5", "free": "2"}
        helper = [m for m in matches if m.record.file_path == "pool/errors.py"]
        assert all(m.score < top.score for m in helper)
        helpers += helper
    assert [m.record.error_message for m in helpers] == ["{message}"]  # found by its line


SERVING = """
from http import HTTPStatus

class OpenAIServing:
    def create_error_response(self, message, err_type="BadRequestError", status_code=400):
        return create_error_response(message, err_type, status_code)

    async def _check_model(self, request):
        if request.model in self.served_model_names:
            return None
        return error_response or self.create_error_response(
            message=f"The model `{request.model}` does not exist.",
            err_type="NotFoundError",
            status_code=HTTPStatus.NOT_FOUND,
        )

    async def chat(self, request):
        if request.tool_choice == "auto" and not self.enable_auto_tools:
            return self.create_error_response(
                '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                "to be set"
            )
        try:
            return await self.generate(request)
        except ValueError as e:
            return self.create_error_response(str(e))
"""


def test_an_http_error_response_is_a_site_its_json_body_finds(
    session, settings: Settings, tmp_path: Path
) -> None:
    """vLLM's server answers a wrong model name or tool choice as a JSON error body built by
    `create_error_response(message, err_type=..., status_code=...)`, not as a raise; people
    paste that body (corpus cases vllm-119, vllm-120, vllm-039). Each call with a message is
    a site of the class it names (BadRequestError by default) and the status it answers; a
    call with a computed message (`str(e)`) has no text a body could be found by."""
    root = tmp_path / "src"
    _write(root / "vllm" / "__init__.py", "")
    _write(root / "vllm" / "serving_engine.py", SERVING)
    release = stored_drafts.resolve_release(str(root), repo="vllm-project/vllm", ref="v0.3.3")
    stored_drafts.harvest_release(session, release)
    session.commit()
    stored = session.exec(select(Record)).all()
    documents = [json.loads(r.document) for r in stored]
    assert sorted((d["errorClass"], d["httpStatus"], d["lineNumber"]) for d in documents) == [
        ("BadRequestError", 400, 19),
        ("NotFoundError", 404, 11),
    ]  # str(e) and the helper's own `message` parameter: no site
    matcher = Matcher(session.get_bind(), settings.cache_dir, 1 << 20)
    for name, line in (
        ("vllm-119-model-does-not-exist-json-404.json", 11),
        ("vllm-120-model-does-not-exist-openai-404.json", 11),
        ("vllm-039-auto-tool-choice-json-body.json", 19),
    ):
        top = match_text(matcher, session, real_pastes.case(name)["paste"]).matches[0]
        assert (top.record.file_path, top.record.line_number) == ("vllm/serving_engine.py", line)


def test_a_long_multi_line_message_keeps_its_first_line() -> None:
    """The first line names the error; the rest is captured, so the pattern stays
    within RE2's program limit."""
    lines = "\n".join(
        f"Tip {n}: read the documentation of the checkpoint module" for n in range(30)
    )
    source = f"def check():\n    raise CheckpointError(HEADER + {lines!r})\nHEADER = 'mismatch:\\n'"
    [site] = extract_raises(source)
    assert site.message.template == "mismatch:\n{details}"
    check_pattern(site.message.pattern)


def test_a_long_one_line_message_keeps_a_start_that_fits_the_program_limit() -> None:
    """SGLang's numa_utils asserts a one-line message of 900+ characters whose
    pattern compiles to 1,036 RE2 instructions; its start, cut after a word, names the
    error, and the rest is captured."""
    advice = " ".join(f"hint {n}: bind rank {n} to its own cores." for n in range(40))
    source = f'def check(world_size):\n    assert ok, f"{{world_size}} ranks, too many. {advice}"'
    [site] = extract_raises(source)
    assert site.message is not None
    assert site.message.template.startswith("{world_size} ranks, too many. hint 0:")
    assert site.message.template.endswith(" {details}")
    check_pattern(site.message.pattern)
    real = f"16 ranks, too many. {advice}"
    captured = re.fullmatch(site.message.pattern, real)
    assert captured is not None
    assert captured["world_size"] == "16"
    assert real.endswith(captured["details"])


# --- trees -----------------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text))


def test_tree_prefix_tags_skipped_dirs_and_unparsable_files(tmp_path: Path) -> None:
    module = "sglang/srt/distributed/kv_transfer/v1/pool.py"
    _write(
        tmp_path / module,
        """
        class Pool:
            def free(self, n):
                if n < 0:
                    raise RuntimeError(f"Attempted to free {n} buffers")
                if n > 9:
                    raise RuntimeError(f"Attempted to free {n} buffers")
        """,
    )
    _write(tmp_path / "sglang/srt/broken.py", "def broken(:\n")
    _write(tmp_path / "sglang/srt/latin.py", "# -*- coding: ascii -*-\nx = 'é'\n")
    _write(tmp_path / "sglang/tests/test_pool.py", "raise ValueError('test only error')\n")
    _write(tmp_path / "sglang/benchmarks/bench.py", "raise ValueError('bench only error')\n")
    _write(tmp_path / "other/outside.py", "raise ValueError('outside the package')\n")
    progress: list[tuple[int, int, str]] = []

    result = harvest_tree(
        tmp_path,
        repo="sgl-project/sglang",
        ref="0132848349585cfe6aae51c4941cbae872505f8a",
        path_prefix="python/",
        analyzed_at=ANALYZED_AT,
        package_dir="sglang",
        progress=lambda *args: progress.append(args),
    )

    assert (result.files, result.raise_sites) == (1, 2)
    assert result.skipped == {SkipReason.UNPARSABLE_FILE: 2}
    assert [total for _, total, _ in progress] == [3, 3, 3]
    assert progress[-1][0] == 3
    first, second = (draft.record for draft in result.drafts)
    assert first["filePath"] == "python/" + module
    assert first["tags"] == ["distributed", "kv-transfer"]
    assert first["githubUrl"] == (
        "https://github.com/sgl-project/sglang/blob/0132848349585cfe6aae51c4941cbae872505f8a/"
        "python/sglang/srt/distributed/kv_transfer/v1/pool.py#L1-L7"
    )
    assert (first["sourceCodeStart"], first["sourceCodeEnd"]) == (1, 7)
    assert first["slug"] == "attempted-to-free-n-buffers"
    assert first["id"] != second["id"]  # same template twice in a function: occurrence order
    assert result.drafts[0].function == "free"
    assert result.drafts[0].class_name == "Pool"


# --- the installed torch package --------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_site() -> Path:
    """site-packages of the installed torch (the `reproducers` extra); its tests skip without."""
    torch = pytest.importorskip("torch")
    return Path(torch.__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def torch_result(torch_site: Path) -> HarvestResult:
    """One harvest of all of torch's Python sources, shared by the tests below."""
    return _harvest_torch(torch_site)


@pytest.fixture(scope="module")
def torch_drafts_at(torch_result: HarvestResult) -> dict[tuple[str, int], list[Draft]]:
    """The drafts by (filePath, lineNumber): what a traceback frame gives."""
    index: dict[tuple[str, int], list[Draft]] = {}
    for draft in torch_result.drafts:
        key = (draft.record["filePath"], draft.record["lineNumber"])
        index.setdefault(key, []).append(draft)
    return index


def test_torch_yields_thousands_of_schema_valid_drafts(torch_result: HarvestResult) -> None:
    drafts = torch_result.drafts
    assert torch_result.files > 2000
    assert len(drafts) > 10_000
    raise_skips = sum(torch_result.skipped.values()) - torch_result.skipped.get(
        SkipReason.UNPARSABLE_FILE, 0
    )
    drafted = {id(draft.site) for draft in drafts}  # a join of pieces drafts each piece
    assert torch_result.raise_sites + torch_result.log_sites == len(drafted) + raise_skips
    logged = {id(d.site) for d in drafts if d.record["errorType"] in ("log", "warning")}
    assert len(logged) == torch_result.log_sites > 1000  # torch warns a lot: warnings.warn
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for draft in drafts:
        record = draft.record
        assert list(record) == RECORD_KEYS
        validator.validate(record)
        assert record["filePath"].startswith("torch/")
        assert not {"test", "tests", "benchmarks"} & set(record["filePath"].split("/"))
        assert record["slug"] == _seed_slug(record["errorMessage"])
        start, end = record["sourceCodeStart"], record["sourceCodeEnd"]
        assert start <= record["lineNumber"] <= end
        assert record["sourceCode"].count("\n") == end - start
        statement = {
            "raise": "raise",
            "assert": "assert",
            "check": "torch._check",
            "call": "(",
            "log": "log",  # the logger's name says so: `logger.warning(`, `log.error(`
            "warning": "warn(",
        }[draft.site.kind]
        line = record["sourceCode"].split("\n")[record["lineNumber"] - start]
        assert statement in line.lower()


def test_torch_ids_are_unique(torch_result: HarvestResult) -> None:
    ids = [draft.record["id"] for draft in torch_result.drafts]
    assert len(set(ids)) == len(ids)


def test_torch_patterns_compile_in_re2_and_fullmatch_their_template(
    torch_result: HarvestResult,
) -> None:
    for draft in torch_result.drafts:
        record = draft.record
        placeholders = tuple(re.compile(record["messagePattern"]).groupindex)
        assert re2.compile(record["messagePattern"]).groups == len(placeholders)
        values = {name: f"<{name} value {i}>" for i, name in enumerate(placeholders)}
        message = _render(record["errorMessage"], placeholders, values)
        for engine in (re, re2):
            assert engine.fullmatch(record["messagePattern"], message), record


def test_torch_patterns_pass_the_pattern_limits(torch_result: HarvestResult) -> None:
    """Program size, groups, empty and catch-all matches, \\C: none of torch's patterns is
    refused (bench/bench_hostile.py --sections patterns checks vLLM and SGLang too)."""
    refused = {}
    for draft in torch_result.drafts:
        if draft.located:  # found by its raise site, never by this one-part pattern
            assert matched_by_location(draft.record["messagePattern"]), draft.record
            continue
        try:
            check_pattern(draft.record["messagePattern"])
        except PatternError as error:
            refused[draft.record["id"]] = str(error)
    assert refused == {}


def test_torch_ids_are_deterministic_across_runs(
    torch_site: Path, torch_result: HarvestResult
) -> None:
    """A second run, scoped to one subpackage, gives the very same records."""
    again = _harvest_torch(torch_site, "torch/optim").drafts
    assert len(again) > 50
    first = {d.record["id"]: d.record for d in torch_result.drafts}
    assert all(first[d.record["id"]] == d.record for d in again)


def test_torch_id_survives_lines_inserted_above_a_raise(
    tmp_path: Path, torch_site: Path, torch_result: HarvestResult
) -> None:
    module = "torch/optim/sgd.py"
    lines = (torch_site / module).read_text().split("\n")
    inserted, at = 7, 60  # between the raises of SGD.__init__
    moved = tmp_path / module
    moved.parent.mkdir(parents=True)
    moved.write_text("\n".join(lines[:at] + [""] * inserted + lines[at:]))

    again = _harvest_torch(tmp_path).drafts
    before = {
        d.record["id"]: d.record for d in torch_result.drafts if d.record["filePath"] == module
    }
    after = {d.record["id"]: d.record for d in again}
    assert after.keys() == before.keys()
    assert len(before) >= 5
    shifts = {after[i]["lineNumber"] - before[i]["lineNumber"] for i in before}
    assert shifts == {0, inserted}  # raises above line 60 stay, the others move down


def _sgd(torch: ModuleType, **options: object) -> object:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], **options)


REAL_ERRORS: dict[str, Callable[[ModuleType], object]] = {
    "sgd-learning-rate": lambda torch: _sgd(torch, lr=-1),  # f-string
    "adam-beta": lambda torch: torch.optim.Adam(
        [torch.nn.Parameter(torch.zeros(2))], betas=(1.5, 0.9)
    ),  # f-string with a subscript
    "dropout-probability": lambda torch: torch.nn.Dropout(p=2),
    "conv-padding-mode": lambda torch: torch.nn.Conv2d(3, 3, 3, padding_mode="foo"),
    "conv-groups": lambda torch: torch.nn.Conv2d(4, 4, 3, groups=3),  # literal
    "get-submodule": lambda torch: torch.nn.Module().get_submodule("nope"),  # concatenation
    "sequential-index": lambda torch: torch.nn.Sequential()[5],
    "unflatten-size": lambda torch: torch.nn.Unflatten(1, [2, 2.5]),
    "cosine-restarts": lambda torch: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sgd(torch, lr=0.1), T_0=0
    ),
    "module-dict-value": lambda torch: torch.nn.ModuleDict({"a": 1}),
}


@pytest.mark.parametrize("trigger", REAL_ERRORS.values(), ids=REAL_ERRORS.keys())
def test_real_torch_error_matches_the_draft_at_its_raise(
    trigger: Callable[[ModuleType], object],
    torch_site: Path,
    torch_drafts_at: dict[tuple[str, int], list[Draft]],
) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as caught:  # noqa: PT011 - whatever torch raises
        trigger(torch)
    frame = traceback.extract_tb(caught.value.__traceback__)[-1]
    file_path = Path(frame.filename).resolve().relative_to(torch_site).as_posix()
    drafts = torch_drafts_at[(file_path, frame.lineno)]
    message = str(caught.value)
    assert any(
        re2.fullmatch(d.record["messagePattern"], message)
        and d.record["errorClass"].rpartition(".")[2] == type(caught.value).__name__
        for d in drafts
    ), (message, [d.record["messagePattern"] for d in drafts])


# --- log sites -----------------------------------------------------------------------------


def test_log_and_warning_calls_at_warning_level_or_above_are_sites() -> None:
    """A logger's warning/error/exception/critical call and warnings.warn: the level (or the
    warning's category) is the class a paste shows; %-style arguments fill the template as
    logging formats them; debug, info and a message known only at run time are left out."""
    sites = extract_raises(
        dedent(
            """
            import logging, warnings
            from warnings import warn
            logger = logging.getLogger(__name__)
            def check(n, limit, name, e):
                logger.warning("Input prompt (%d tokens) is too long and exceeds limit of %d",
                               n, limit)
                logger.warning_once("Detected errors during sampling! NaN in the logits.")
                logging.error(f"Ignore import error when loading {name}: {e}")
                self._logger.critical("Engine {} died unexpectedly".format(name))
                logger.exception("Failed to load %(name)s", {"name": name})
                warnings.warn("The profiler is deprecated; use torch.profiler", FutureWarning)
                warnings.warn(message=f"Skipping layer {name}", category=errors.LayerWarning)
                warn("progress bars are disabled")
                logger.info("Loaded %s", name)
                logger.debug("weights of %s", name)
                logger.error(e)
                logger.warning("%s", e)
                print("not a logger")
            """
        )
    )
    found = [(s.kind, s.error_class, s.level, s.message and s.message.template) for s in sites]
    too_long = "Input prompt ({n} tokens) is too long and exceeds limit of {limit}"
    assert found == [
        ("log", "WARNING", "WARNING", too_long),
        ("log", "WARNING", "WARNING", "Detected errors during sampling! NaN in the logits."),
        ("log", "ERROR", "ERROR", "Ignore import error when loading {name}: {e}"),
        ("log", "CRITICAL", "CRITICAL", "Engine {name} died unexpectedly"),
        ("log", "ERROR", "ERROR", "Failed to load {name}"),
        ("warning", "FutureWarning", "WARNING", "The profiler is deprecated; use torch.profiler"),
        ("warning", "LayerWarning", "WARNING", "Skipping layer {name}"),
        ("warning", "UserWarning", "WARNING", "progress bars are disabled"),
    ]  # fmt: skip
    assert re.fullmatch(
        sites[0].message.pattern,  # type: ignore[union-attr]
        "Input prompt (9000 tokens) is too long and exceeds limit of 8192",
    )


def test_log_sites_are_records_that_leave_the_raises_ids_alone(tmp_path: Path) -> None:
    """A message logged and then raised has two records, the log's marked as such; the
    raise keeps the id it had before log sites were harvested, and the log records validate
    against the schema."""
    source = """
        import logging
        logger = logging.getLogger(__name__)
        def sample(logits, strict):
            if logits.isnan().any():
                logger.warning("Detected errors during sampling! NaN in the logits.")
                if strict:
                    raise ValueError("Detected errors during sampling! NaN in the logits.")
            warnings.warn("sampling in float16 is deprecated", DeprecationWarning)
        """
    _write(tmp_path / "pkg" / "sampler.py", source)
    result = harvest_tree(
        tmp_path, repo="example/pkg", ref="v1", analyzed_at=ANALYZED_AT, package_dir="pkg"
    )
    records = [d.record for d in result.drafts]
    assert [(r["errorType"], r["errorClass"], r["severity"], r["lineNumber"]) for r in records] == [
        ("exception", "ValueError", "error", 8),
        ("log", "WARNING", "warning", 6),
        ("warning", "DeprecationWarning", "warning", 9),
    ]
    assert (result.raise_sites, result.log_sites) == (1, 2)
    for record in records:
        jsonschema.validate(record, SCHEMA)
    assert len({r["id"] for r in records}) == 3

    only_raise = source.replace("logger.warning(", "print(").replace("warnings.warn(", "print(")
    _write(tmp_path / "pkg" / "sampler.py", only_raise)
    before = harvest_tree(
        tmp_path, repo="example/pkg", ref="v1", analyzed_at=ANALYZED_AT, package_dir="pkg"
    )
    assert [d.record["id"] for d in before.drafts] == [records[0]["id"]]


@pytest.mark.network  # two real releases, from the shared cache
def test_real_log_sites_of_sglang_and_vllm_are_harvested(tmp_path: Path) -> None:
    """The log sites people paste, read from the real releases: SGLang's sampler warns of
    NaN logits (and raises the same words when told to crash on warnings), vLLM's scheduler
    warns of a prompt over the limit with %-style arguments."""
    from tests.helpers.releases import RELEASES

    files = [
        ("sglang", "0.4.9.post6", "sglang/srt/layers/sampler.py"),
        ("vllm", "0.8.5.post1", "vllm/core/scheduler.py"),
    ]
    logged = {}
    for package, version, path in files:
        folder = tmp_path / package
        (folder / path).parent.mkdir(parents=True)
        (folder / path).write_text((RELEASES.ensure_unpacked(package, version) / path).read_text())
        result = harvest_tree(
            folder, repo=f"example/{package}", ref="v", analyzed_at=ANALYZED_AT, package_dir=package
        )
        for draft in result.drafts:
            record = draft.record
            if record["errorType"] != "exception":
                jsonschema.validate(record, SCHEMA)
                logged[record["errorMessage"]] = (record["errorClass"], record["messagePattern"])
        raised = [
            d.record["errorMessage"] for d in result.drafts if d.record["errorType"] == "exception"
        ]
        logged[f"{package} raises"] = raised
    nan = "Detected errors during sampling! NaN in the logits."
    assert logged[nan][0] == "WARNING"
    assert nan in logged["sglang raises"]
    too_long = (
        "Input prompt ({num_new_tokens} tokens) is too long and exceeds limit of {prompt_limit}"
    )
    assert logged[too_long][0] == "WARNING"
    assert re2.fullmatch(
        logged[too_long][1], "Input prompt (40000 tokens) is too long and exceeds limit of 32768"
    )
