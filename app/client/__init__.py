"""Explaining errors where they happen: an API client, `errkb run`, the Python hook, the pytest
plugin and the CI action's summary, all on the same small client."""
