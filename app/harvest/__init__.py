"""Harvest: the raise sites of an upstream release as draft records.

`extract` reads the AST (raise sites, messages, factories, constants, what resolves them),
`context` adds what the code around each site tells (guard, callers, handlers). Storing the
drafts is app.harvest.drafts' job.
"""

from app.harvest.extract import extract_raises, harvest_tree
from app.harvest.sites import (
    Draft,
    HarvestResult,
    Message,
    ProgressCallback,
    RaiseSite,
    SkipReason,
)

__all__ = [
    "Draft",
    "HarvestResult",
    "Message",
    "ProgressCallback",
    "RaiseSite",
    "SkipReason",
    "extract_raises",
    "harvest_tree",
]
