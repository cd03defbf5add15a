"""ERRKB_LOG_FORMAT=json: one JSON object a line, each request's line naming its id; as
text, uvicorn's own lines."""

import copy
import json
import logging
import re

import httpx
import pytest
from pydantic import ValidationError
from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter as UvicornAccessFormatter

from app.config import Settings
from app.ops.logs import (
    ACCESS_FORMAT,
    TEXT_LOG_CONFIG,
    AccessFormatter,
    JsonFormatter,
    configure_logging,
    logged_path,
)
from tests.helpers.served import errkb_serve


def test_json_logs_name_the_request_id_echoed_to_the_client(make_client, capsys) -> None:
    try:
        client = make_client(log_format="json")
        response = client.get("/api/errors/0000000000000000", headers={"X-Request-ID": "abc-1"})
        assert response.status_code == 404
        assert response.headers["x-request-id"] == "abc-1"
        logging.getLogger("app.test").warning("outside a request")
    finally:
        configure_logging("text")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    [access] = [line for line in lines if line["logger"] == "app.access"]
    assert access["requestId"] == "abc-1"
    assert access["level"] == "INFO"
    assert access["method"] == "GET"
    assert access["status"] == 404
    assert access["route"] == "/api/errors/{record_id}"
    assert access["path"] == "/api/errors/0000000000000000"
    assert access["durationMs"] > 0
    assert access["time"].endswith("+00:00")
    [outside] = [line for line in lines if line["logger"] == "app.test"]
    assert outside["requestId"] is None
    assert outside["message"] == "outside a request"


def test_requests_without_an_id_get_fresh_distinct_ones(client) -> None:
    ids = [client.get("/healthz").headers["x-request-id"] for _ in range(3)]
    ids.append(client.get("/healthz", headers={"X-Request-ID": "bad id!"}).headers["x-request-id"])
    assert len(set(ids)) == 4
    assert all(re.fullmatch(r"[0-9a-f]{32}", request_id) for request_id in ids)


def test_text_format_installs_no_handler(make_client) -> None:
    make_client(log_format="json")
    configure_logging("text")
    assert not any(
        isinstance(handler.formatter, JsonFormatter) for handler in logging.getLogger().handlers
    )


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValidationError, match="log_format"):
        Settings(log_format="xml")


def test_the_text_log_config_is_uvicorns_own_but_for_the_access_formatter() -> None:
    expected = copy.deepcopy(LOGGING_CONFIG)
    expected["formatters"]["access"]["()"] = "app.ops.logs.AccessFormatter"
    assert json.loads(TEXT_LOG_CONFIG.read_text()) == expected


def _access_record(
    client: str, method: str, path: str, version: str, status: int, level: int = logging.INFO
) -> logging.LogRecord:
    """The record uvicorn's protocol logs for a request."""
    args = (client, method, path, version, status)
    message = '%s - "%s %s HTTP/%s" %d'
    return logging.LogRecord("uvicorn.access", level, __file__, 1, message, args, None)


@pytest.mark.parametrize("use_colors", [False, True])
@pytest.mark.parametrize(
    "request_line",
    [
        ("127.0.0.1:51234", "POST", "/api/match", "1.1", 200),
        ("127.0.0.1:51234", "GET", "/api/errors/c53f6de81577a6bc", "1.1", 304),
        ("[::1]:443", "HEAD", "/errors?q=free%20buffers&limit=5", "2", 404),
        ("10.0.0.7:80", "POST", "/api/errors", "1.0", 413),
        ("10.0.0.7:80", "GET", "/readyz", "1.1", 503),
        ("10.0.0.7:80", "GET", "/odd", "1.1", 599),  # no phrase
    ],
)
def test_access_lines_are_uvicorns_own(request_line: tuple, use_colors: bool) -> None:
    ours = AccessFormatter(ACCESS_FORMAT, use_colors=use_colors)
    uvicorns = UvicornAccessFormatter(ACCESS_FORMAT, use_colors=use_colors)
    for level in (logging.INFO, logging.WARNING):
        line = ours.format(_access_record(*request_line, level=level))
        assert line == uvicorns.format(_access_record(*request_line, level=level))


def test_another_access_format_is_formatted_as_uvicorn_does() -> None:
    fmt = "%(client_addr)s %(status_code)s"
    record = _access_record("a:1", "GET", "/", "1.1", 200)
    assert AccessFormatter(fmt, use_colors=False).format(record) == "a:1 200 OK"


SECRET = "postgres://admin:S3cretPassw0rd@db.internal:5432/prod"


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/search?q=HF_TOKEN%3Dhf_abc", "/search"),
        ("/search/?q=x", "/search/"),
        ("/api/search?q=x&limit=5", "/api/search"),
        ("/match?text=x", "/match"),
        ("/api/match?limit=3", "/api/match"),
        ("/errors?q=free", "/errors?q=free"),  # no paste goes there
        ("/api/errors/c53f6de81577a6bc", "/api/errors/c53f6de81577a6bc"),
        ("/searches?q=x", "/searches?q=x"),
    ],
)
def test_the_query_string_of_a_path_that_may_carry_a_paste_is_left_out(
    path: str, logged: str
) -> None:
    assert logged_path(path) == logged
    for use_colors, fmt in (
        (False, ACCESS_FORMAT),
        (True, ACCESS_FORMAT),
        (False, "%(request_line)s"),
    ):
        line = AccessFormatter(fmt, use_colors=use_colors).format(
            _access_record("127.0.0.1:1", "GET", path, "1.1", 200)
        )
        assert f"GET {logged} HTTP/1.1" in line
        assert path.partition("?")[2] not in line or logged == path


def test_a_served_paste_or_query_never_reaches_the_text_access_log(tmp_path) -> None:
    """A real `errkb serve` logging as text: a one-line secret pasted in the box, searched
    for and matched, shows in no line of its log."""
    with errkb_serve(tmp_path) as base, httpx.Client(base_url=base) as client:
        assert client.post("/match", data={"text": SECRET}).status_code == 200
        assert client.get("/search", params={"q": SECRET}).status_code == 200
        assert client.get("/api/search", params={"q": SECRET}).status_code == 200
        assert client.post("/api/match", json={"text": SECRET}).status_code == 200
        assert client.get("/healthz", params={"probe": "kept"}).status_code == 200
    log = (tmp_path / "serve.log").read_text()
    assert '"POST /match HTTP/1.1" 200' in log
    assert '"GET /search HTTP/1.1" 200' in log
    assert '"GET /api/search HTTP/1.1" 200' in log
    assert '"GET /healthz?probe=kept HTTP/1.1" 200' in log  # other paths keep theirs
    for piece in ("S3cret", "admin", "db.internal", "postgres"):
        assert piece not in log
