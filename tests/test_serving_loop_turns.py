"""Tests for app.serving.loop_turns: one caller a pass of the event loop, first come first
served, the loop free to run its other callbacks (its sockets) between two turns."""

import asyncio

from app.serving.loop_turns import LoopTurns

CALLERS = 6
WAIT_S = 10  # a caller never given its turn fails the test, not hangs it


async def _passes_and_turns(turns: LoopTurns, cancelled: set[int] = frozenset()) -> list[str]:
    """What ran, in order: "pass" once a pass of the loop (a callback that puts itself back
    each time, as the loop's reading of its sockets does), a caller's number in its turn."""
    events: list[str] = []
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    def each_pass() -> None:
        events.append("pass")
        if not done.is_set():
            loop.call_soon(each_pass)

    async def caller(number: int) -> None:
        await turns.take()
        events.append(str(number))

    loop.call_soon(each_pass)
    tasks = [asyncio.create_task(caller(number)) for number in range(CALLERS)]
    await asyncio.sleep(0)  # every caller is waiting now
    for number in cancelled:
        tasks[number].cancel()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), WAIT_S)
    done.set()
    return events


def test_callers_take_turns_in_order_one_a_pass() -> None:
    events = asyncio.run(_passes_and_turns(LoopTurns()))
    callers = [event for event in events if event != "pass"]
    assert callers == [str(number) for number in range(CALLERS)]
    between = "".join("p" if event == "pass" else "c" for event in events)
    assert "cc" not in between  # a pass of the loop between any two turns


def test_a_caller_cancelled_while_it_waits_is_passed_over() -> None:
    events = asyncio.run(_passes_and_turns(LoopTurns(), cancelled={1, 4}))
    assert [event for event in events if event != "pass"] == ["0", "2", "3", "5"]


def test_the_same_turns_serve_a_new_loop() -> None:
    """An app outlives the loop that served it in tests: a turn granted by a loop that is
    gone must not keep the next loop's callers waiting."""
    turns = LoopTurns()

    old = asyncio.new_event_loop()

    async def first() -> None:
        await turns.take()
        old.stop()  # the loop stops at the end of this pass: the next grant was for a later one

    waiting = [old.create_task(first())] + [old.create_task(turns.take()) for _ in range(2)]
    old.run_forever()
    for task in waiting:
        task.cancel()
    old.close()
    events = asyncio.run(_passes_and_turns(turns))
    assert [event for event in events if event != "pass"] == [str(n) for n in range(CALLERS)]
