"""`errkb run -- CMD`: real commands under a real `errkb serve`; their output passes through
byte for byte and in order, each error is explained once after it, and the exit status is
the command's."""

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.client.run import exit_status
from tests.helpers.logs import FREE_BUFFERS, FREE_BUFFERS_ID
from tests.helpers.records import DATA_DIR
from tests.helpers.served import ERRKB, client_env

RUN_S = 120

# A training script's shape: output on both pipes, then the curated vLLM error, raised twice
# (in a worker thread and in the main thread): explained once.
CRASHING = f"""
import sys, threading, time

def free_buffer():
    raise RuntimeError({FREE_BUFFERS!r})

for step in range(3):
    print(f"step {{step}}", flush=True)
    time.sleep(0.2)  # the relay of each pipe has this long to pass it on, on a loaded machine
    print(f"warn {{step}}", file=sys.stderr, flush=True)
    time.sleep(0.2)
sys.stdout.buffer.write(b"raw \\xff\\xfe bytes\\r\\n")
sys.stdout.flush()
threading.Thread(target=free_buffer).start()
time.sleep(0.3)
print("after the thread", flush=True)
time.sleep(0.2)  # an unbuffered print writes its newline apart: stderr must not come between
free_buffer()
"""


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    return script


def _errkb_run(command: list[str]) -> list[str]:
    return [*ERRKB, "run", "--", *command]


def test_output_passes_through_unchanged_and_each_error_is_explained_once(
    errkb_server: str, tmp_path: Path
) -> None:
    script = _script(tmp_path, CRASHING)
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=RUN_S)
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        capture_output=True,
        env=client_env(ERRKB_SERVER=errkb_server),
        timeout=RUN_S,
    )
    assert run.returncode == alone.returncode == 1
    assert run.stdout == alone.stdout  # byte for byte, the undecodable bytes too
    assert b"raw \xff\xfe bytes\r\n" in run.stdout
    stderr = run.stderr.decode()
    command_lines = [line for line in stderr.splitlines() if not _is_explanation(line)]
    assert command_lines == alone.stderr.decode().splitlines()  # unchanged, in order
    assert stderr.count(f"errkb: RuntimeError: {FREE_BUFFERS} (vllm-project/vllm)") == 1
    explanation = stderr[stderr.index("errkb: ") :]
    assert explanation.splitlines()[1:3] == [
        f"  see: {errkb_server}/errors/{FREE_BUFFERS_ID}",
        "  fix: Audit all free_buffer call sites and guarantee each acquired buffer list is "
        "freed exactly once (use try/finally with a 'freed' flag or clear the list after "
        "freeing).",
    ]
    # explained after the traceback that raised it, never inside it
    first_traceback = stderr.index(f"RuntimeError: {FREE_BUFFERS}\n")
    assert stderr.index("errkb: ") > first_traceback


def test_an_explanation_waits_for_the_end_of_the_commands_unfinished_line(
    errkb_server: str, tmp_path: Path
) -> None:
    """The explanation is ready while the command is halfway through a stderr line: it comes
    after that line, which stays whole."""
    script = _script(
        tmp_path,
        f"""
        import sys, time, traceback
        try:
            raise RuntimeError({FREE_BUFFERS!r})
        except RuntimeError:
            traceback.print_exc()
        sys.stderr.write("progress: 50%")
        sys.stderr.flush()
        time.sleep(3)  # the explanation arrives meanwhile
        sys.stderr.write(" ... 100%\\n")
        sys.stderr.flush()
        """,
    )
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        capture_output=True,
        env=client_env(ERRKB_SERVER=errkb_server),
        timeout=RUN_S,
    )
    lines = run.stderr.decode().splitlines()
    assert "progress: 50% ... 100%" in lines, lines
    explained = lines.index(f"errkb: RuntimeError: {FREE_BUFFERS} (vllm-project/vllm)")
    assert explained > lines.index("progress: 50% ... 100%")


def _is_explanation(line: str) -> bool:
    return line.startswith(("errkb: ", "  see: ", "  fix: ", "  reproduce"))


def test_both_pipes_keep_their_order_when_they_share_a_terminal(
    errkb_server: str, tmp_path: Path
) -> None:
    script = _script(tmp_path, CRASHING)
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=client_env(ERRKB_SERVER=errkb_server),
        timeout=RUN_S,
    )
    lines = run.stdout.decode("utf-8", "replace").splitlines()
    steps = [line for line in lines if line.startswith(("step", "warn", "after the thread"))]
    assert steps == ["step 0", "warn 0", "step 1", "warn 1", "step 2", "warn 2", "after the thread"]
    explanation = f"errkb: RuntimeError: {FREE_BUFFERS} (vllm-project/vllm)"
    assert explanation in lines, lines
    assert "Exception in thread Thread-1 (free_buffer):" in lines, lines
    explained = lines.index(explanation)
    assert lines.index("Exception in thread Thread-1 (free_buffer):") < explained
    assert run.returncode == 1


def test_lines_written_back_to_back_on_both_pipes_keep_their_order_on_one_file(
    tmp_path: Path,
) -> None:
    script = _script(
        tmp_path,
        """
        import sys
        for step in range(300):
            print(f"out {step}", flush=True)
            print(f"err {step}", file=sys.stderr, flush=True)
        """,
    )
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=client_env(),
        timeout=RUN_S,
    )
    expected = [f"{pipe} {step}" for step in range(300) for pipe in ("out", "err")]
    assert run.stdout.decode().splitlines() == expected
    assert run.returncode == 0


def test_the_exit_status_is_the_commands(tmp_path: Path) -> None:
    script = _script(tmp_path, "import sys; print('bye'); sys.exit(7)")
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        capture_output=True,
        env=client_env(),
        timeout=RUN_S,
    )
    assert (run.returncode, run.stdout, run.stderr) == (7, b"bye\n", b"")


def test_a_command_ended_by_a_signal_exits_128_plus_its_number(tmp_path: Path) -> None:
    script = _script(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        capture_output=True,
        env=client_env(),
        timeout=RUN_S,
    )
    assert run.returncode == 128 + signal.SIGKILL == exit_status(-signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_reach_the_command(tmp_path: Path, signum: int) -> None:
    script = _script(
        tmp_path,
        """
        import signal, sys, time
        signal.signal(signal.SIGTERM, lambda *_: (print("got SIGTERM", flush=True), sys.exit(143)))
        # Python leaves SIGINT ignored when it starts so (a background job's, and so all the
        # test run's), and the command would never see it: the test asks for it.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:  # "ready" inside the try: a SIGINT right after it is still caught
            print("ready", flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print("got SIGINT", flush=True)
            sys.exit(130)
        """,
    )
    process = subprocess.Popen(
        _errkb_run([sys.executable, str(script)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=client_env(),
        start_new_session=True,  # no terminal: the signal reaches the command only through errkb
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"ready\n"
    process.send_signal(signum)
    stdout, _ = process.communicate(timeout=RUN_S)
    name = signal.Signals(signum).name
    assert stdout == f"got {name}\n".encode()
    assert process.returncode == 128 + signum


def test_an_unanswering_server_never_holds_up_the_output(
    tmp_path: Path, silent_server: str
) -> None:
    script = _script(
        tmp_path,
        f"""
        import sys, time
        print("before", flush=True)
        print("RuntimeError: {FREE_BUFFERS}", file=sys.stderr, flush=True)
        for n in range(20):
            print(f"after {{n}}", flush=True)
            time.sleep(0.05)
        """,
    )
    started = time.monotonic()
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        capture_output=True,
        env=client_env(ERRKB_SERVER=silent_server, ERRKB_SERVER_TIMEOUT_S="1"),
        timeout=RUN_S,
    )
    assert run.returncode == 0
    assert run.stdout.decode().splitlines() == ["before", *(f"after {n}" for n in range(20))]
    assert run.stderr.decode().splitlines() == [
        f"RuntimeError: {FREE_BUFFERS}",
        f"errkb: cannot explain: {silent_server} did not answer within 1 s",
    ]
    assert time.monotonic() - started < RUN_S


def test_a_command_that_does_not_exist_exits_127(tmp_path: Path) -> None:
    run = subprocess.run(
        _errkb_run([str(tmp_path / "no-such-command")]),
        capture_output=True,
        env=client_env(),
        timeout=RUN_S,
    )
    assert run.returncode == 127
    assert run.stderr.decode().startswith(f"errkb: cannot run {tmp_path / 'no-such-command'}")


def test_without_a_server_the_local_store_explains(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'errkb.db'}"
    settings = {"ERRKB_DATABASE_URL": database, "ERRKB_CACHE_DIR": str(tmp_path / "cache")}
    env = client_env(**settings)
    subprocess.run([*ERRKB, "import", str(DATA_DIR)], env=env, check=True, capture_output=True)
    script = _script(tmp_path, f"raise RuntimeError({FREE_BUFFERS!r})")
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]), capture_output=True, env=env, timeout=RUN_S
    )
    assert run.returncode == 1
    assert run.stderr.decode().splitlines()[-4:-2] == [
        f"errkb: RuntimeError: {FREE_BUFFERS} (vllm-project/vllm)",
        f"  see: errkb show {FREE_BUFFERS_ID}",
    ]


def test_a_python_command_writes_as_it_goes_as_on_a_terminal(tmp_path: Path) -> None:
    """Python buffers its stdout on a pipe; errkb run asks it not to, so stdout and stderr
    arrive in the order they were written."""
    script = _script(
        tmp_path,
        """
        import sys, time
        print("first, on stdout")
        time.sleep(0.3)
        print("second, on stderr", file=sys.stderr)
        time.sleep(0.3)
        """,
    )
    env = {key: value for key, value in client_env().items() if key != "PYTHONUNBUFFERED"}
    run = subprocess.run(
        _errkb_run([sys.executable, str(script)]),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        timeout=RUN_S,
    )
    assert run.stdout == b"first, on stdout\nsecond, on stderr\n"
