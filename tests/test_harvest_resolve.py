"""Messages built elsewhere in the release: raising helpers called with a message, and
exception classes whose `__init__` builds it."""

import os
import re
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

from app.config import Settings
from app.harvest import SkipReason, extract_raises
from app.harvest import drafts as stored_drafts
from app.harvest.collect import extract_module
from app.harvest.resolve import ReleaseMessages, resolve_sites
from app.matching.matcher import Matcher
from app.matching.service import match_text
from tests.helpers.harvest import write_source as _write


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


def test_a_message_imported_from_another_module_is_the_sites_message() -> None:
    """vLLM 0.6 keeps its encoder/decoder refusals as constants of `vllm/utils.py`, each also
    in a dict by name, and `vllm/worker/utils.py` raises them by the dict's key or by name:
    each raise site gets the constant's message. A name two modules bind to different
    messages, and a key the dict lacks, stay dynamic."""
    constants = extract_module(
        dedent(
            """
            STR_NOT_IMPL_ENC_DEC_LORA = ("LoRA is currently not currently "
                                         "supported with encoder/decoder models.")
            STR_NOT_IMPL_ENC_DEC_PP = "Pipeline parallelism is not supported with {x}."
            STR_NOT_IMPL_ENC_DEC_ERR_STRS = {
                "STR_NOT_IMPL_ENC_DEC_LORA": STR_NOT_IMPL_ENC_DEC_LORA,
                "STR_NOT_IMPL_ENC_DEC_PP": STR_NOT_IMPL_ENC_DEC_PP,
            }
            CLASHING = "one message"
            """
        ),
        "vllm/utils.py",
    )
    other = extract_module('CLASHING = "another message"\n', "vllm/other.py")
    worker = extract_module(
        dedent(
            """
            from vllm.utils import STR_NOT_IMPL_ENC_DEC_ERR_STRS, STR_NOT_IMPL_ENC_DEC_PP
            def assert_enc_dec_mr_supported_scenario(enc_dec_mr):
                if enc_dec_mr.lora_config is not None:
                    raise NotImplementedError(
                        STR_NOT_IMPL_ENC_DEC_ERR_STRS['STR_NOT_IMPL_ENC_DEC_LORA'])
                if enc_dec_mr.pp > 1:
                    raise NotImplementedError(STR_NOT_IMPL_ENC_DEC_PP)
                if enc_dec_mr.x:
                    raise ValueError(CLASHING)
                if enc_dec_mr.y:
                    raise ValueError(STR_NOT_IMPL_ENC_DEC_ERR_STRS['MISSING'])
            """
        ),
        "vllm/worker/utils.py",
    )
    sites = resolve_sites(worker, ReleaseMessages([constants, other, worker]))
    messages = [(site.line, site.message.template if site.message else site.skip) for site in sites]
    assert messages == [
        (5, "LoRA is currently not currently supported with encoder/decoder models."),
        (8, "Pipeline parallelism is not supported with {x}."),
        (10, SkipReason.DYNAMIC_MESSAGE),
        (12, SkipReason.DYNAMIC_MESSAGE),
    ]


def test_a_helper_raising_the_class_its_caller_passes_raises_that_class() -> None:
    """torch DDP's `_log_and_throw(self, err_type, err_msg)` logs, then `raise
    err_type(err_msg)`: each call raises the class it passes (RuntimeError, ValueError), not
    a class named `err_type`; a call that passes no class name raises a class only run time
    knows."""
    module = extract_module(
        dedent(
            """
            class DistributedDataParallel:
                def _log_and_throw(self, err_type, err_msg):
                    self.logger.set_error_and_log(f"{str(err_type)}: {err_msg}")
                    raise err_type(err_msg)
                def __init__(self, module, kind):
                    if not any(p.requires_grad for p in module.parameters()):
                        self._log_and_throw(RuntimeError, "DDP is not needed without a grad")
                    self._log_and_throw(err_msg="device_ids must be one", err_type=ValueError)
                    self._log_and_throw(kind, "a class run time picks")
            """
        ),
        "torch/nn/parallel/distributed.py",
    )
    calls = [
        site for site in resolve_sites(module, ReleaseMessages([module])) if site.kind == "call"
    ]
    assert [(site.line, site.error_class) for site in calls] == [
        (8, "RuntimeError"),
        (9, "ValueError"),
        (10, "Exception"),
    ]
