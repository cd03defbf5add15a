"""What the harvest tests of several app/harvest modules share: the one raise site of a
snippet, a source file written into a tree, the stamp and the schema their drafts meet."""

import json
from pathlib import Path
from textwrap import dedent

from app.config import PROJECT_ROOT
from app.harvest import RaiseSite, extract_raises

ANALYZED_AT = "2026-09-01T12:00:00.000Z"
SCHEMA = json.loads((PROJECT_ROOT / "data" / "record.schema.json").read_text())


def only_site(source: str) -> RaiseSite:
    """The single raise site of a snippet."""
    (site,) = extract_raises(dedent(source))
    return site


def template_of(source: str) -> str:
    """The message template of a snippet's single raise site, which must have one."""
    site = only_site(source)
    assert site.message is not None, site.skip
    return site.message.template


def write_source(path: Path, text: str) -> None:
    """Write a dedented source file into a tree, making its folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text))
