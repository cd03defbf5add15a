"""Log sites: logger calls at warning level or above and `warnings.warn`, as written
in snippets and in real releases."""

import re
from pathlib import Path
from textwrap import dedent

import jsonschema
import pytest
import re2

from app.harvest import extract_raises, harvest_tree
from tests.helpers.harvest import ANALYZED_AT, SCHEMA


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


def test_a_deprecated_decorator_is_the_warning_site_of_what_it_decorates() -> None:
    """torch marks its old APIs with `@deprecated("...", category=FutureWarning)`: each call
    of the function or class warns with the decorator's message, so the decorator's line is a
    warning site, named after what it decorates; with no category it is a
    DeprecationWarning, and `category=None` warns at no call."""
    sites = extract_raises(
        dedent(
            """
            import typing_extensions
            from typing_extensions import deprecated
            @deprecated(
                "`torch.cuda.amp.autocast(args...)` is deprecated. "
                "Please use `torch.amp.autocast('cuda', args...)` instead.",
                category=FutureWarning,
            )
            class autocast:
                @typing_extensions.deprecated(f"{__name__}.scale is old")
                def scale(self):
                    pass
            @deprecated("silent", category=None)
            def quiet():
                pass
            @functools.lru_cache(maxsize=8)
            def cached():
                pass
            """
        )
    )
    found = [
        (s.line, s.qualname, s.kind, s.error_class, s.message and s.message.template) for s in sites
    ]
    autocast = (
        "`torch.cuda.amp.autocast(args...)` is deprecated. "
        "Please use `torch.amp.autocast('cuda', args...)` instead."
    )
    assert found == [
        (4, "autocast", "warning", "FutureWarning", autocast),
        (10, "autocast.scale", "warning", "DeprecationWarning", "{__name__}.scale is old"),
    ]


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
