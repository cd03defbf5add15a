"""A module read for its raise sites: messages held in local variables and module
constants, the tails branches and loops add to them, and rebinding that makes them dynamic."""

import re
from textwrap import dedent

import re2

from app.harvest import SkipReason, extract_raises
from tests.helpers.harvest import only_site as _only
from tests.helpers.harvest import template_of as _template


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


def test_a_tail_a_trys_handler_adds_is_optional_and_a_rebinding_try_is_dynamic() -> None:
    """SGLang's decode queue builds `Decode transfer failed for request ...` in a local, and
    adds ` with exception {e}` when asking the receiver for its failure raised; a `try` whose
    body rebinds the message, or that has a `finally`, leaves it unknown."""
    sites = extract_raises(
        dedent(
            """
            def failed(rid, receiver):
                error_message = f"Decode transfer failed for request {rid=}"
                try:
                    receiver.failure_exception()
                except Exception as e:
                    error_message += f" with exception {e}"
                raise RuntimeError(error_message)
            def rebound(receiver):
                msg = "transfer failed"
                try:
                    msg = receiver.reason()
                except Exception:
                    msg += " for a reason unknown"
                raise RuntimeError(msg)
            def closed(receiver):
                msg = "transfer failed"
                try:
                    receiver.close()
                except Exception as e:
                    msg += f": {e}"
                finally:
                    receiver = None
                raise RuntimeError(msg)
            """
        )
    )
    first = sites[0].message
    assert first is not None
    pattern = re.compile(first.pattern)
    plain = "Decode transfer failed for request rid='3ce8'"
    assert pattern.fullmatch(plain)
    told = pattern.fullmatch(plain + " with exception KVTransferError(room=1): unknown reason")
    assert told is not None
    assert told["e"] == "KVTransferError(room=1): unknown reason"
    assert [site.skip for site in sites[1:]] == [SkipReason.DYNAMIC_MESSAGE] * 2


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


def test_an_exception_made_into_a_local_and_raised_later_is_a_site_at_each_raise() -> None:
    """vLLM's `e = Exception("WorkerProc initialization failed ...")`, raised in a loop and
    in a handler: each `raise e` raises that message at its own line, where a traceback
    shows it; a name bound again to something else raises nothing known."""
    source = dedent(
        """
        def wait(handles, status):
            e = Exception("WorkerProc initialization failed due to "
                          "an exception in a background process.")
            for handle in handles:
                try:
                    if handle != status:
                        raise e
                except EOFError:
                    raise e from None

        def other(x):
            err = ValueError(f"bad value {x}")
            err = x
            raise err
        """
    )
    sites = extract_raises(source, "m.py")
    made = [(site.line, site.error_class, site.message and site.message.template) for site in sites]
    text = "WorkerProc initialization failed due to an exception in a background process."
    assert made[:2] == [(8, "Exception", text), (10, "Exception", text)]
    assert [(site.line, site.skip) for site in sites[2:]] == [(15, SkipReason.RERAISE_VARIABLE)]
