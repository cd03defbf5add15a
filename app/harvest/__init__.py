"""Harvest: the raise sites of an upstream release as draft records.

`extract` walks a release's files and runs the steps: `collect` reads each module's raise
sites (AST; `raise_sites`, `log_sites`, `guards` and `factories` say what a statement makes),
`resolve` resolves messages built elsewhere in the release, `render` makes the draft records
(`messages` rebuilds each message as a template and a pattern), `context` adds what the code
around each site tells (guard, callers, handlers), `advice` the settings that reach it
(`settings_table`, `site_settings`), the message's advice and the trigger. `sites` and `parts`
hold the data they share. Storing the drafts is app.harvest.drafts' job.
"""

from app.harvest.extract import extract_raises, harvest_tree
from app.harvest.sites import Draft, HarvestResult, Message, ProgressCallback, RaiseSite, SkipReason

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
