"""Error chunks cut from output as it arrives: what `errkb run` and `errkb explain` send to
the matcher, and when."""

from app.client.watch import QUIET_S, TAIL_LINES, ErrorWatch, chunks_of
from app.matching.tracebacks.parse import parse_exceptions
from tests.helpers.logs import FREE_BUFFERS, TORCHRUN_LOG, VLLM_LOG, VMM_SLICE

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 8, in <module>\n'
    "    free_buffer()\n"
    f"RuntimeError: {FREE_BUFFERS}\n"
)


def test_a_vllm_log_gives_one_chunk_with_the_whole_traceback_and_its_context() -> None:
    (chunk,) = chunks_of(VLLM_LOG)
    (exception,) = parse_exceptions(chunk)
    assert (exception.qualified_class, exception.message) == ("RuntimeError", FREE_BUFFERS)
    assert [frame.line for frame in exception.frames] == [701, 285]
    assert "vLLM API server version 0.33.0" in chunk  # the context names the upstream


def test_a_torchrun_log_with_rank_prefixes_gives_its_exception() -> None:
    (chunk,) = chunks_of(TORCHRUN_LOG)
    assert [e.message for e in parse_exceptions(chunk)] == [VMM_SLICE]


def test_plain_output_gives_no_chunk() -> None:
    assert chunks_of("loading weights\nstep 1 loss 2.3\nINFO done\n" * 50) == []


def test_a_chained_traceback_stays_in_one_chunk() -> None:
    chained = (
        TRACEBACK
        + "\nThe above exception was the direct cause of the following exception:\n\n"
        + TRACEBACK.replace("RuntimeError: ", "ValueError: wrapped: ")
    )
    (chunk,) = chunks_of("before\n" + chained + "after\n")
    exceptions = parse_exceptions(chunk)
    assert [e.qualified_class for e in exceptions] == ["RuntimeError", "ValueError"]
    assert exceptions[1].cause_index == 0


def test_each_error_is_sent_once_however_often_it_repeats() -> None:
    log = "".join(f"request {n}\n{TRACEBACK}" + "ok\n" * TAIL_LINES for n in range(5))
    assert len(chunks_of(log)) == 1
    assert len(chunks_of(log + TRACEBACK.replace(FREE_BUFFERS, "another"))) == 2


def test_a_complete_exception_is_sent_after_a_few_more_lines_or_a_quiet_period() -> None:
    watch = ErrorWatch()
    lines = TRACEBACK.splitlines()
    assert [watch.feed(line, 0.0) for line in lines] == [[], [], [], []]
    assert watch.due() == QUIET_S  # nothing more arrives: sent once the quiet period is over
    ready = [chunk for n in range(TAIL_LINES) for chunk in watch.feed(f"next {n}", 0.1)]
    assert len(ready) == 1
    assert ready[0].startswith(TRACEBACK)
    assert watch.due() is None


def test_an_open_traceback_with_no_exception_line_is_sent_after_the_quiet_period() -> None:
    watch = ErrorWatch()
    for line in TRACEBACK.splitlines()[:3]:  # the process died before printing the message
        assert watch.feed(line, 1.0) == []
    assert watch.due() == 1.0 + QUIET_S
    assert watch.flush() == [TRACEBACK.split("RuntimeError")[0]]


def test_a_line_logged_at_error_level_opens_a_chunk() -> None:
    log = "INFO starting\nERROR 11-30 10:00:09 [core.py:710] Attempted to free more buffers\n"
    assert chunks_of(log + "INFO go on\n" * 30) == [log + "INFO go on\n" * TAIL_LINES]


def test_a_progress_bar_line_and_binary_noise_are_taken_in_stride() -> None:
    bar = "\r".join(f"{n}%|{'#' * n}" for n in range(0, 101, 5))
    log = f"{bar}\n\x00\xff garbage\n{TRACEBACK}"
    (chunk,) = chunks_of(log)
    assert [e.message for e in parse_exceptions(chunk)] == [FREE_BUFFERS]


def test_the_quick_look_passes_every_line_the_closer_look_would_take() -> None:
    """Lines without a candidate word skip the parser; none of them may be an error's."""
    import builtins

    from app.client.watch import _candidate, _is_exception_line

    names = [
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    ]
    lines = [
        *(f"{name}: message" for name in names),
        *names,
        "vllm.v1.engine.exceptions.EngineDeadError: engine died",
        "torch.OutOfMemory: CUDA out of memory",
        "mymodule.Failure",
        *VLLM_LOG.splitlines(),
        *TORCHRUN_LOG.splitlines(),
        *TRACEBACK.splitlines(),
        "Process SpawnProcess-1:",
        "Exception in thread worker:",
    ]
    taken = [line for line in lines if _is_exception_line(line)]
    assert len(taken) > len(names)
    assert [line for line in taken if not _candidate(line)] == []
    errorish = [
        line for line in lines if "ERROR" in line or line.startswith(("Traceback", "  File"))
    ]
    assert [line for line in errorish if not _candidate(line)] == []
