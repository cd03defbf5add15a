"""Real servers in tests: a free loopback port, the admin token, how long a start may take."""

import socket

ADMIN_TOKEN = "test-admin-token"
SERVER_START_S = 60.0


def free_port() -> int:
    """A port nothing listens on, on the loopback interface."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
