"""Records the tests build on: the curated ones of data/, the seeds, synthetic records made
from them, and hostile search queries that every search surface must survive."""

import copy
import json
import re
from pathlib import Path

from app.config import PROJECT_ROOT

DATA_DIR = PROJECT_ROOT / "data" / "records"
SEEDS_DIR = Path(__file__).parent.parent / "fixtures" / "seeds"

SEED_001 = "b6bab2e17ae18394"
SEED_002 = "edc4df790b100979"
SEED_002_ERROR = "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096"
SEED_IDS = (SEED_001, "c53f6de81577a6bc", SEED_002)
SEED_FILES = tuple(DATA_DIR / f"{record_id}.json" for record_id in sorted(SEED_IDS))
"""The three records of data/ that the seed site explains: search and ranking tests are written
against exactly these, whatever else data/ holds."""


def curated_records() -> dict[str, dict]:
    """The records of data/, by id: what a store that imported data/ holds (it grows as
    records are curated, so tests count it instead of naming a number)."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(DATA_DIR.glob("*.json"))}


HOSTILE_QUERIES = [
    "\u02bc",  # letters that unaccent turns into an apostrophe
    "don\u02bct \u02b9x\u02b9 \u02bbokina \u02c8stress \u0149",
    "\u02bc\u02bc\u02bc free",
    "'\"`\u2018\u2019\u201c\u201d\u00ab\u00bb\u2039\u203a\u300c\u300d\uff07",
    "free & buffers | !x <-> y:* (z)",
    "&|!<->:*()",
    "a\\b \\\\ \\'",
    "\x01\x02\x1f\x7f free\x0bbuffers",
    "\u200f\u202e\u2066free\u2069 \u05e9\u05dc\u05d5\u05dd",
    "\U0001f600\U0001f469\u200d\U0001f4bb free",
    "x" * 300 + " " + "\u00e9" * 200,
    "\ufb01le \u2460 \u00bd \u2122",
    '"',
    '"unbalanced',
    "(",
    "((free",
    "free)",
    "-",
    "-free",
    "free -buffers",
    "*",
    "free*",
    "**",
    ":",
    "errorMessage:free",
    "{error_message}: free",
    "NEAR",
    "NEAR(free buffers, 2)",
    "free AND",
    "OR free",
    "NOT",
    "^free",
    "free + buffers",
    "<script>alert(1)</script>",
    "'; DROP TABLE records; --",
    "\x00",
    "\\",
    "\u00e9t\u00e9 caf\u00e9",
    "\u4f1a\u8bdd \u7f13\u51b2\u533a",
    "\U0001f525\U0001f525",
    "\u200b",
    "___",
    "free" * 100,
    " ".join(["free"] * 200),
]


def make_record(number: int, message: str, **fields) -> dict:
    """A valid record with a fresh id, built on seed 001, with this message and fields."""
    record = copy.deepcopy(json.loads((DATA_DIR / f"{SEED_001}.json").read_text()))
    slug = re.sub(r"[^a-z0-9]+", "-", message[:50].lower()).strip("-")
    record.update(
        id=f"{number:016x}",
        errorMessage=message,
        messagePattern=re.escape(message),
        slug=slug,
        documentation="Nothing to see here.",
        triggerScenarios=None,
        commonSituations=None,
        solutions=None,
        preventionTips=None,
        tags=["synthetic"],
        backgroundTag=None,
    )
    record.update(fields)
    return record
