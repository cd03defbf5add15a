"""Turns of the event loop, one caller at a time: work that runs on the loop itself waits
for its turn, so that the loop reads its sockets between any two pieces of it.

asyncio runs, in one pass, every callback that was ready when the pass began; 64 matches woken
together would hold the loop for all 64 before it looked at a socket again, and a client that
has just connected would wait for its first answer through dozens of such passes
(docs/benchmarks.md, "Costs behind the code's choices"). A turn is granted in one pass and the
next turn in the pass after it, so the loop accepts connections and reads requests after each.
"""

import asyncio
from collections import deque


class LoopTurns:
    """First come, first served, one turn per pass of the event loop."""

    def __init__(self) -> None:
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._granting = False

    async def take(self) -> None:
        """Wait for this caller's turn; the turn lasts until the caller next awaits."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # an app served by a new loop (tests): start afresh
            self._waiting, self._loop, self._granting = deque(), loop, False
        turn = loop.create_future()
        self._waiting.append(turn)
        if not self._granting:
            self._granting = True
            loop.call_soon(self._grant, loop)
        await turn

    def _grant(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wake the first caller still waiting (its task runs in the next pass), and come
        back in that pass for the one after it."""
        if loop is not self._loop:  # scheduled by a loop the turns have since left
            return
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():  # a caller cancelled while it waited is passed over
                turn.set_result(None)
                break
        if self._waiting:
            loop.call_soon(self._grant, loop)
        else:
            self._granting = False
