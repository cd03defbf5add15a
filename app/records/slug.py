"""A record's slug, by the seeds' rule: one rule for every writer of records (harvest's
drafts, matching's statement records, the tags harvest derives from folder names)."""

import re

from app.records.model import max_chars

SOURCE_CHARS = max_chars("slug")
_OTHER = re.compile(r"[^a-z0-9]+")


def slug(text: str) -> str:
    """The first characters of `text`, as many as a slug may hold, lowercased, each run of
    other characters turned into '-', trimmed of '-' at both ends ('' when none is left)."""
    return _OTHER.sub("-", text[:SOURCE_CHARS].lower()).strip("-")
