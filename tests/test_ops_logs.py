"""ERRKB_LOG_FORMAT=json: one JSON object a line, each request's line naming its id."""

import json
import logging
import re

import pytest
from pydantic import ValidationError

from app.config import Settings
from app.ops.logs import JsonFormatter, configure_logging


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
