"""Draft records of a file's sites: dynamic messages and bare asserts found by where they
raise, log sites beside raises, and ids that stay what they were."""

from pathlib import Path

import jsonschema

from app.harvest import harvest_tree
from app.records.site_keys import matched_by_location
from tests.helpers.harvest import ANALYZED_AT, SCHEMA
from tests.helpers.harvest import write_source as _write


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
