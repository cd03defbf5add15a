"""What goes wrong with a released upstream package, for every step of the release cache to
raise and for the reproducers to report."""


class UpstreamError(RuntimeError):
    """A release could not be downloaded, unpacked or imported; the message says why.

    Reproducers turn it into an "error" result (never a pass), so the cause must be in it.
    """


class StubUsedError(RuntimeError):
    """Upstream code reached a stubbed name: the stub list of the reproducer is wrong."""
