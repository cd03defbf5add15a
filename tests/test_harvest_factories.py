"""Factories: functions returning the exception raised, followed through nested scopes
and through each other."""

from textwrap import dedent

from app.harvest import SkipReason, extract_raises


def test_factories_are_followed_through_nested_scopes_and_factories() -> None:
    """torch's env:// rendezvous raises `_env_error("RANK")`, built by two factories."""
    sites = extract_raises(
        dedent(
            """
            def _rendezvous_error(msg):
                return ValueError("Error initializing torch.distributed using " + msg)

            def _tcp_handler(url):
                def _error(msg):
                    return _rendezvous_error("tcp:// rendezvous: " + msg)
                raise _error("port number missing")

            def _env_handler(url):
                def _error(msg):
                    return _rendezvous_error("env:// rendezvous: " + msg)
                def _env_error(var):
                    return _error(f"environment variable {var} expected, but not set")
                def _get_env_or_raise(env_var):
                    raise _env_error(env_var)
                raise _env_error("RANK")

            class Pool:
                def _full(self, size):
                    return MemoryError(f"pool full: {size} bytes asked")
                def put(self, size):
                    raise self._full(size)

            def _unknown(kind):
                return make_error(kind)
            raise _unknown("x")
            """
        )
    )
    prefix = "Error initializing torch.distributed using "
    env = prefix + "env:// rendezvous: environment variable "
    found = [(s.error_class, s.message.template if s.message else s.skip) for s in sites]
    assert found == [
        ("ValueError", prefix + "tcp:// rendezvous: port number missing"),
        ("ValueError", env + "{env_var} expected, but not set"),
        ("ValueError", env + "RANK expected, but not set"),
        ("MemoryError", "pool full: {size} bytes asked"),
        (None, SkipReason.DYNAMIC_CLASS),
    ]
