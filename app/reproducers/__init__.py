"""Reproducers: proving records against the real upstream releases.

`upstream` fetches and loads a release, `kit` is what each script in reproducers/ shares,
`runner` runs the scripts and stores their runs, `drift` checks raise sites against a release,
`generation` writes reproducers from raise sites and verifies them.
"""
