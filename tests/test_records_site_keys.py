"""Site keys: the regex spellings of one template are one key, keys that really differ stay
apart, and release labels sort with their numbers compared as numbers."""

import json

from app.records import site_keys
from app.records.model import ErrorRecord
from tests.helpers.records import DATA_DIR


def test_regex_spellings_of_one_template_are_one_key() -> None:
    spellings = [
        ("no slice at offset (.+?)", "no slice at offset {offset}"),
        ("no slice at offset (?P<control_offset>(?s:.+?))", "no slice at offset {x}"),
        ("no slice at offset \\d+", "no slice at offset {n}"),
        ("no slice \\C at (.+?)", "no slice at offset {control_offset}"),
    ]
    templates = {site_keys.message_template(pattern, message) for pattern, message in spellings}
    assert templates == {"no slice at offset \x00"}  # `\C` is RE2's: read from the message
    assert site_keys.message_template("free_buf\\(\\) to free", "") == "free_buf() to free"
    assert site_keys.message_template(None, "a {b} c") == "a \x00 c"


def _site(**changes) -> str | None:
    seed = json.loads((DATA_DIR / "c53f6de81577a6bc.json").read_text())
    base = seed | {
        "repo": "vllm-project/vllm",
        "filePath": "vllm/pool.py",
        "errorClass": "RuntimeError",
        "errorMessage": "cannot free {n} buffers",
        "messagePattern": "cannot free (?P<n>(?s:.+?)) buffers",
    }
    return site_keys.site_key(ErrorRecord.model_validate(base | changes))


def test_keys_that_really_differ_stay_apart() -> None:
    same = _site()
    assert _site(messagePattern="cannot free (.+?) buffers") == same
    assert _site(errorClass="builtins.RuntimeError") == same
    assert _site(filePath="vllm/renamed_pool.py") != same
    assert _site(messagePattern="cannot release (.+?) buffers") != same
    assert _site(errorClass="ValueError") != same
    assert _site(repo="sgl-project/sglang") != same
    assert _site(filePath=None) is None


def test_release_order_compares_numbers_as_numbers() -> None:
    labels = ["vllm==0.10.0", "vllm==0.9.2", "vllm==0.33.0", "vllm==0.9.10"]
    assert sorted(labels, key=site_keys.release_order) == [
        "vllm==0.9.2",
        "vllm==0.9.10",
        "vllm==0.10.0",
        "vllm==0.33.0",
    ]
