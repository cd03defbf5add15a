"""The app as a whole: importing it must not load torch; every reply carries the
security headers and /docs works offline."""

import base64
import hashlib
import re
import subprocess
import sys

import pytest


def test_import_app_does_not_import_torch() -> None:
    code = (
        "import sys, app.main, app.cli, app.records.service\n"
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
        ("POST", "/api/match", 422),
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
