"""Search: full-text search over the records in tiers.

`query` makes user text safe words, `fts` ranks the tiers over the store's index,
`highlight` marks matches and cuts snippets, `related` finds neighbouring records, and
`service.search` is the one code path for the API, the pages and the CLI.
"""
