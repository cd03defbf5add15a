"""The match index's backends, each test run on both (hyperscan only where installed)."""

import pytest

try:
    import hyperscan
except ImportError:
    hyperscan = None

BACKENDS = [
    pytest.param(
        "hyperscan", marks=pytest.mark.skipif(hyperscan is None, reason="hyperscan not installed")
    ),
    "portable",
]
