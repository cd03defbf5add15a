"""`errkb run -- CMD ARGS...`: run a command, pass its output through untouched, and explain
each error it prints, on standard error, once.

Three kinds of thread keep the command's output first: one per pipe copies each read to this
process's own stdout or stderr at once (raw bytes, no buffering, no decoding) and only then
hands a copy to the watcher; the watcher cuts lines into error chunks (app.client.watch); the
explainer asks the server or the local store about each chunk and prints what it learns.
Nothing the command writes ever waits on the watcher or on the network. An explanation is
written between two lines of the command, never inside one.

The exit status is the command's, or 128+N when a signal N ended it, as a shell reports it;
SIGTERM and SIGINT sent to `errkb run` reach the command (SIGINT from a terminal already
reaches every process of the foreground group, so it is not sent twice).
"""

import codecs
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import IO

from app.client.explain import Source, as_text, explanations
from app.client.http import ClientError
from app.client.watch import ErrorWatch

READ_BYTES = 64 * 1024
FORWARDED = (signal.SIGINT, signal.SIGTERM)


class _Output:
    """This process's stdout and stderr, written whole and in turn by several threads.

    errkb's own lines go to stderr only where the command's stderr is at the start of a
    line: one that arrives while the command is halfway through a line (a read can end
    anywhere) waits for that line's end, or for the command's stderr to close."""

    def __init__(self, out_fd: int, err_fd: int) -> None:
        self.fds = {"stdout": out_fd, "stderr": err_fd}
        self.lock = threading.Lock()
        self.line_open = {"stdout": False, "stderr": False}
        self.closed: set[str] = set()
        self.ended: set[str] = set()
        self.notes: list[bytes] = []

    def write(self, name: str, data: bytes) -> None:
        """Copy the command's bytes; a closed pipe (`| head`) drops them, the command runs on."""
        with self.lock:
            if name in self.closed:
                return
            try:
                _write_all(self.fds[name], data)
            except BrokenPipeError:
                self.closed.add(name)
                return
            self.line_open[name] = not data.endswith(b"\n")
            if name == "stderr" and not self.line_open[name]:
                self._write_notes()

    def note(self, text: str) -> None:
        """errkb's own lines on stderr, on lines of their own."""
        with self.lock:
            self.notes.append(text.encode("utf-8", "replace"))
            if not self.line_open["stderr"] or "stderr" in self.ended:
                self._write_notes()

    def end(self, name: str) -> None:
        """The command closed this pipe: notes waiting for its unfinished line go out now."""
        with self.lock:
            self.ended.add(name)
            if name == "stderr":
                self._write_notes()

    def _write_notes(self) -> None:
        if not self.notes or "stderr" in self.closed:
            self.notes.clear()
            return
        data = b"".join(self.notes)
        self.notes.clear()
        if self.line_open["stderr"]:  # the command's unfinished last line stays its own
            data = b"\n" + data
        try:
            _write_all(self.fds["stderr"], data)
        except BrokenPipeError:
            self.closed.add("stderr")
            return
        self.line_open["stderr"] = False


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Explainer(threading.Thread):
    """Asks about each chunk in turn and prints each record once; a failure to reach the
    server or store is said once per distinct reason, and the command carries on."""

    def __init__(self, connect: Callable[[], Source], output: _Output) -> None:
        super().__init__(name="errkb-explain", daemon=True)
        self.connect = connect
        self.output = output
        self.chunks: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.explained: set[str] = set()
        self.failures: set[str] = set()
        self.source: Source | None = None

    def run(self) -> None:
        while (chunk := self.chunks.get()) is not None:
            try:
                if self.source is None:
                    self.source = self.connect()
                for explanation in explanations(self.source, chunk, self.explained):
                    self.output.note(as_text(explanation))
            except ClientError as error:
                if str(error) not in self.failures:
                    self.failures.add(str(error))
                    self.output.note(f"errkb: cannot explain: {error}\n")


class _Watcher(threading.Thread):
    """Lines of each pipe to error chunks, sent on when complete or after a quiet period."""

    def __init__(self, explainer: _Explainer, names: tuple[str, ...]) -> None:
        super().__init__(name="errkb-watch", daemon=True)
        self.explainer = explainer
        self.reads: queue.SimpleQueue[tuple[str, bytes | None]] = queue.SimpleQueue()
        self.watches = {name: ErrorWatch() for name in names}
        self.decoders = {
            name: codecs.getincrementaldecoder("utf-8")("replace") for name in self.watches
        }
        self.partial = dict.fromkeys(self.watches, "")

    def run(self) -> None:
        open_pipes = set(self.watches)
        while open_pipes:
            dues = [due for watch in self.watches.values() if (due := watch.due()) is not None]
            wait = max(0.0, min(dues) - time.monotonic()) if dues else None
            try:
                name, data = self.reads.get(timeout=wait)
            except queue.Empty:
                self._quiet(time.monotonic())
                continue
            if data is None:
                open_pipes.discard(name)
                self._end(name)
            else:
                self._lines(name, data)
            self._quiet(time.monotonic())  # the other pipe's error, while this one talks on
        self.explainer.chunks.put(None)

    def _lines(self, name: str, data: bytes) -> None:
        text = self.partial[name] + self.decoders[name].decode(data)
        *lines, self.partial[name] = text.split("\n")
        for chunk in self.watches[name].feed_lines(lines, time.monotonic()):
            self.explainer.chunks.put(chunk)

    def _quiet(self, now: float) -> None:
        for watch in self.watches.values():
            due = watch.due()
            if due is not None and due <= now:
                for chunk in watch.flush():
                    self.explainer.chunks.put(chunk)

    def _end(self, name: str) -> None:
        rest = self.partial[name] + self.decoders[name].decode(b"", final=True)
        watch = self.watches[name]
        chunks = watch.feed(rest, time.monotonic()) if rest else []
        for chunk in chunks + watch.flush():
            self.explainer.chunks.put(chunk)


def _copy(pipe: IO[bytes], name: str, output: _Output, watcher: _Watcher) -> None:
    """The command's bytes to our own descriptor first, then a copy to the watcher."""
    with pipe:
        while data := os.read(pipe.fileno(), READ_BYTES):  # what is there, not a full buffer
            output.write(name, data)
            watcher.reads.put((name, data))
    output.end(name)
    watcher.reads.put((name, None))


def _unbuffered(environment: Mapping[str, str]) -> dict[str, str]:
    """The command's environment, where a Python command writes as it goes: on a pipe
    (ours) Python would hold its stdout back in a buffer, unlike on the terminal it would
    otherwise have, and its output would reach the reader late and out of order with
    stderr. A PYTHONUNBUFFERED the caller set is kept."""
    return {"PYTHONUNBUFFERED": "1", **environment}


def _same_file(out_fd: int, err_fd: int) -> bool:
    """Whether our stdout and stderr are one file (a terminal, `2>&1`): the command then gets
    one pipe for both, so its lines reach that file in the order it wrote them, as they
    would without errkb; two pipes read by two threads can swap lines written close together.
    The bytes are passed on as stderr's, where errkb's own lines wait for a line's end."""
    try:
        out, err = os.fstat(out_fd), os.fstat(err_fd)
    except OSError:
        return False
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


def _terminal_sends_sigint() -> bool:
    """Whether a terminal's Ctrl-C reaches the command by itself: this process's group is
    the terminal's foreground group (the command was started in the same group)."""
    for fd in (0, 1, 2):
        try:
            return os.tcgetpgrp(fd) == os.getpgrp()
        except OSError:
            continue
    return False


def exit_status(returncode: int) -> int:
    """The command's status as a shell reports it: 128+N for a command ended by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def run_command(
    command: list[str],
    connect: Callable[[], Source],
    explain_wait_s: float,
    out_fd: int = 1,
    err_fd: int = 2,
) -> int:
    """Run `command`, pass its output through, explain its errors; its exit status.

    `connect` opens the source of explanations on the first error (a server's client, or
    the local store); `explain_wait_s` bounds how long explanations still being fetched may
    delay the exit once the command has ended.
    """
    output = _Output(out_fd, err_fd)
    explainer = _Explainer(connect, output)
    shared = _same_file(out_fd, err_fd)
    watcher = _Watcher(explainer, ("stderr",) if shared else ("stdout", "stderr"))
    try:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if shared else subprocess.PIPE,
            bufsize=0,
            env=_unbuffered(os.environ),
        )
    except OSError as error:
        output.note(f"errkb: cannot run {command[0]}: {error.strerror or error}\n")
        return 127 if isinstance(error, FileNotFoundError) else 126
    pipes = [
        threading.Thread(
            target=_copy, args=(stream, name, output, watcher), name=f"errkb-{name}", daemon=True
        )
        for name, stream in (
            (("stderr", process.stdout),)
            if shared
            else (("stdout", process.stdout), ("stderr", process.stderr))
        )
        if stream is not None
    ]

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_sends_sigint():
            return
        process.send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in FORWARDED}
    try:
        explainer.start()
        watcher.start()
        for pipe in pipes:
            pipe.start()
        returncode = process.wait()
        for pipe in pipes:
            pipe.join()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    watcher.join(explain_wait_s)
    explainer.join(explain_wait_s)
    return exit_status(returncode)
