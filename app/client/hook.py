"""The Python hook: an uncaught exception's traceback is followed by errkb's explanation.

    python -m app.client.hook script.py ARGS...     (or: -m module ARGS...)
    import app.client.hook                          (at the top of a program)

Either installs `sys.excepthook` and `threading.excepthook`. The program's own traceback is
printed first, exactly as without the hook; then, if the server (ERRKB_SERVER) or, without
one, an existing local store answers within ERRKB_HOOK_TIMEOUT_S, the explanation of each
error in it. Otherwise nothing is added: a crashing program must not wait on errkb, nor be
told about errkb's own troubles.

Child processes get the hook too: it puts a folder holding a `sitecustomize` module first on
PYTHONPATH, which every Python process started below this one (a subprocess, a
`multiprocessing` or `torch.multiprocessing.spawn` worker) runs at start. A worker of
`torch.multiprocessing.spawn` hands its traceback to the parent, which raises it again inside
ProcessRaisedException: the parent's hook explains it from there.

Importing this module loads only the standard library; the settings, the client and (without
a server) the local store are loaded when an exception arrives.
"""

import os
import runpy
import sys
import threading
import traceback
from pathlib import Path
from types import TracebackType

SITE = Path(__file__).resolve().parent / "site"
"""The folder whose sitecustomize.py installs the hook in child processes."""

_MARK = "__errkb_hook__"


def install() -> None:
    """Install the hooks in this process (once, however often it is called) and in every
    Python process it starts."""
    if getattr(sys.excepthook, _MARK, False):
        return
    previous = sys.excepthook
    previous_thread = threading.excepthook

    def excepthook(
        kind: type[BaseException], error: BaseException, trace: TracebackType | None
    ) -> None:
        previous(kind, error, trace)
        explain_exception(kind, error, trace)

    def thread_excepthook(args: threading.ExceptHookArgs) -> None:
        previous_thread(args)
        if args.exc_value is not None:
            explain_exception(args.exc_type, args.exc_value, args.exc_traceback)

    setattr(excepthook, _MARK, True)
    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    _hand_down()


def _hand_down() -> None:
    """Put SITE first on PYTHONPATH, which child processes inherit and run at start."""
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    if str(SITE) not in entries:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(SITE), *entries])


def explain_exception(
    kind: type[BaseException], error: BaseException, trace: TracebackType | None
) -> None:
    """Print the explanations of this exception's traceback on stderr, or nothing."""
    if issubclass(kind, KeyboardInterrupt | SystemExit):
        return
    from app.client.explain import as_text, explain_quietly

    text = "".join(traceback.format_exception(kind, error, trace))
    sys.stderr.write("".join(as_text(explanation) for explanation in explain_quietly(text) or []))
    sys.stderr.flush()


def main(argv: list[str]) -> None:
    """`python -m app.client.hook script.py ARGS` or `-m module ARGS`: run it hooked, as
    `python script.py ARGS` would (its own sys.argv and sys.path[0])."""
    if not argv or (argv[0] == "-m" and len(argv) < 2):
        sys.stderr.write("usage: python -m app.client.hook script.py [ARGS...] | -m MODULE ...\n")
        raise SystemExit(2)
    install()
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as error:  # reported as the interpreter would, from the program's frames
        trace = _program_frames(error.__traceback__)
        sys.excepthook(type(error), error.with_traceback(trace), trace)
        raise SystemExit(1) from None


def _program_frames(trace: TracebackType | None) -> TracebackType | None:
    """The traceback without the frames of this module and runpy above the program's own."""
    while trace is not None and (
        trace.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>")
        or trace.tb_frame.f_globals.get("__name__") == "runpy"
    ):
        trace = trace.tb_next
    return trace


if __name__ == "__main__":
    main(sys.argv[1:])
else:
    install()
