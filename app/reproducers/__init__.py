"""Reproducers: proving records against the real upstream releases.

`harness` is what each script in reproducers/ shares, `runner` runs the scripts and stores their
runs, `drift` checks raise sites against a release, `generation` writes reproducers from raise
sites and verifies them; the release itself is fetched and loaded by app.upstreams.release_cache.
"""
