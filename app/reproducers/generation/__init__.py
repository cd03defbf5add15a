"""Reproducer scripts generated from raise sites, one module per step, and in bulk.

`reproducer` makes the script of one site: `source` and `guards` read the function around
the raise, `solving` searches for the values, `calls` plans the call that reaches it,
`script` writes the script; `sites` holds what they take and answer. `bulk` generates and
stores the scripts of many drafts, `verification` runs them on the real release.
"""
