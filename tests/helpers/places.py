"""Where a piece of the server's work ran: on the event loop, or in a thread."""

import asyncio

ON_LOOP, IN_THREAD = "event loop", "thread"


def where() -> str:
    """ON_LOOP when called from a running event loop, else IN_THREAD."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return IN_THREAD
    return ON_LOOP
