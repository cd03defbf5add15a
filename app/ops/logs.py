"""Logs: one JSON object a line with ERRKB_LOG_FORMAT=json, each carrying its request id.

The request id comes from the client's X-Request-ID header when it is a sane token, or is
made here; it is echoed in the response header and kept in a context variable that the
handler's thread inherits, so every line logged for a request names it.
"""

import http
import itertools
import json
import logging
import os
import re
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter as UvicornAccessFormatter

REQUEST_ID: ContextVar[str | None] = ContextVar("errkb_request_id", default=None)
REQUEST_ID_HEADER = "X-Request-ID"
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# LogRecord attributes that are not the caller's `extra` fields (uvicorn adds color_message).
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}


_PROCESS_ID = os.urandom(8).hex()
_REQUESTS = itertools.count(1)


def request_id_from(header: str | None) -> str:
    """The client's id when it is a short token (it ends up in logs), else a fresh one: this
    process's random prefix and its request count. Not uuid4: it reads os.urandom, which lets
    go of the GIL on the event loop for every request, and under load the loop then waits
    behind the busy request threads to take it back."""
    if header and _SANE_ID.fullmatch(header):
        return header
    return f"{_PROCESS_ID}{next(_REQUESTS):016x}"


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON: time, level, logger, message, requestId, extras."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "requestId": REQUEST_ID.get(),
        }
        entry.update((k, v) for k, v in vars(record).items() if k not in _STANDARD)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


TEXT_LOG_CONFIG = Path(__file__).with_name("uvicorn-text-logging.json")
"""uvicorn's own logging config with AccessFormatter for its access lines: what `errkb
serve` logs as text, with one worker or several."""
ACCESS_FORMAT = LOGGING_CONFIG["formatters"]["access"]["fmt"]
_PHRASES = {status.value: status.phrase for status in http.HTTPStatus}


PASTE_PATHS = ("/search", "/match", "/api/search", "/api/match")
"""Paths whose query string may hold what a user typed or pasted: the access log leaves it
out (a one-line paste is often a secret's line: a URL with its password, a token)."""


def logged_path(full_path: str) -> str:
    """The path as the access log writes it: without its query string on PASTE_PATHS."""
    path, mark, _ = full_path.partition("?")
    return path if mark and path.rstrip("/") in PASTE_PATHS else full_path


class AccessFormatter(UvicornAccessFormatter):
    """uvicorn's access line, the same text, made without uvicorn's two copies of each record
    and its second pass through the format string. The access log is a large part of a small
    request's server CPU, and a log call costs less with this formatter than with uvicorn's
    (docs/benchmarks.md, "Server CPU a request, and a match in process"). With colours (a
    terminal) or another format it formats as uvicorn does. Either way the query string of a
    path that may carry a paste is left out (logged_path)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        client_addr, method, full_path, http_version, status = record.args  # type: ignore[misc]
        full_path = logged_path(str(full_path))
        if self.use_colors or self._fmt != ACCESS_FORMAT:
            record = logging.makeLogRecord(vars(record))
            record.args = (client_addr, method, full_path, http_version, status)
            return super().formatMessage(record)
        level = record.levelname
        phrase = _PHRASES.get(int(str(status)), "")
        return (
            f"{level}:{' ' * (8 - len(level))} {client_addr} - "
            f'"{method} {full_path} HTTP/{http_version}" {status} {phrase}'
        )


class _JsonHandler(logging.StreamHandler):
    """The root handler installed for ERRKB_LOG_FORMAT=json (found again by its class)."""


def configure_logging(log_format: str) -> None:
    """JSON lines on stderr for every logger with "json"; leave logging alone with "text".

    Idempotent: an app built again (tests build many) replaces the handler it installed.
    """
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _JsonHandler)]:
        root.removeHandler(handler)
    if log_format == "json":
        handler = _JsonHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        root.addHandler(handler)
        root.setLevel(logging.INFO)
