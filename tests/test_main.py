"""The app as a whole: importing it must not load torch; every reply carries the
security headers and /docs works offline; HTTP as clients and proxies expect it (HEAD,
Allow, WWW-Authenticate, relative redirects, a paste box that says why it refuses)."""

import base64
import hashlib
import re
import subprocess
import sys

import pytest


def test_import_app_does_not_import_torch() -> None:
    code = (
        "import sys, app.main, app.cli.commands, app.records.service\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- security headers and offline API docs ----------------------------------------

SECURITY = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/", 200),
        ("GET", "/search?q=buffer", 200),
        ("GET", "/errors/c53f6de81577a6bc", 200),
        ("GET", "/errors/0000000000000000", 404),
        ("GET", "/static/style.css", 200),
        ("GET", "/api/errors/c53f6de81577a6bc", 200),
        ("GET", "/api/stats", 200),
        ("GET", "/healthz", 200),
        ("GET", "/openapi.json", 200),
        ("GET", "/docs", 200),
        ("POST", "/api/match/batch", 422),
        ("POST", "/api/errors", 413),
    ],
)
def test_every_reply_carries_the_security_headers(client, method, path, status) -> None:
    content = b"x" * (2 << 20) if path == "/api/errors" else b""
    response = client.request(method, path, content=content)
    assert response.status_code == status
    for name, value in SECURITY.items():
        assert response.headers[name] == value
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy


def test_docs_load_only_local_files(client) -> None:
    page = client.get("/docs")
    urls = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert urls
    assert all(url.startswith("/") for url in urls), urls
    for url in urls:
        assert client.get(url).status_code == 200, url
    assert "cdn" not in page.text.lower()
    [inline] = re.findall(r"<script>(.*?)</script>", page.text, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in page.headers["content-security-policy"]
    assert client.get("/redoc").status_code == 404  # it would load from a CDN


# --- HTTP as clients and proxies expect it -------------------------------------------


@pytest.mark.parametrize(
    "path", ["/healthz", "/", "/errors/c53f6de81577a6bc", "/api/errors/c53f6de81577a6bc"]
)
def test_head_is_get_without_the_body(client, path) -> None:
    got = client.get(path)
    head = client.head(path)
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == str(len(got.content))


def test_head_of_a_missing_page_is_404(client) -> None:
    assert client.head("/errors/0000000000000000").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/healthz", "GET, HEAD"),
        ("GET", "/api/match", "POST"),
        ("PUT", "/", "GET, HEAD"),
        # several routes share a path: every one's methods
        ("PATCH", "/api/errors/c53f6de81577a6bc", "GET, HEAD, PUT, DELETE"),
        ("POST", "/api/errors/c53f6de81577a6bc", "GET, HEAD, PUT, DELETE"),
        ("DELETE", "/api/errors", "GET, HEAD, POST"),
    ],
)
def test_405_says_what_is_allowed(client, method, path, allow) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow


def test_401_names_the_scheme(client) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = client.post("/api/errors", json={}, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("path", "location"),
    [("/api/errors/", "/api/errors"), ("/search/?q=buffer", "/search?q=buffer")],
)
def test_slash_redirects_are_relative_whatever_the_host(client, path, location) -> None:
    response = client.get(path, headers={"host": "evil.example"}, follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == location
    assert client.get(path).status_code == 200


def test_the_paste_box_refuses_an_oversized_paste_with_a_reason(client) -> None:
    paste = "ValueError: " + "x" * (1 << 20)
    response = client.post("/match", data={"text": paste, "mode": "match"})
    assert response.status_code == 413
    assert "Paste too large" in response.text
    assert "larger than 1048576 bytes" in response.text


def test_the_paste_box_takes_a_paste_larger_than_a_mib_once_encoded(client) -> None:
    """Form encoding triples every character outside A-Z, 0-9: a 700 KB paste of them is
    2 MB on the wire, and still a paste within the limit."""
    paste = "RuntimeError: Attempted to free more buffers than allocated\n" + "/" * 700_000
    response = client.post("/match", data={"text": paste, "mode": "match"})
    assert response.status_code == 200
    assert "c53f6de81577a6bc" in response.text
