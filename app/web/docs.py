"""/docs: Swagger UI served from this server, so the API docs work with no network.

Swagger UI's files come from the `fastapi-offline` package (its static folder, mounted at
/static/docs); FastAPI's own /docs would load them from a CDN. The page's one inline script
(Swagger UI's start-up) is allowed by its hash in the page's Content-Security-Policy.
"""

import base64
import hashlib
import re
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

from app.web.security import CONTENT_SECURITY_POLICY

ASSETS_DIR = Path(str(files("fastapi_offline") / "static"))
ASSETS_URL = "/static/docs"
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)

router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
def read_docs(request: Request) -> HTMLResponse:
    """Swagger UI on /openapi.json, from local files."""
    page = get_swagger_ui_html(
        openapi_url=request.app.openapi_url,
        title=f"{request.app.title} API",
        swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url="/static/favicon.svg",
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from elsewhere
    )
    html = bytes(page.body).decode()
    hashes = " ".join(_script_hash(script) for script in _INLINE_SCRIPT.findall(html))
    policy = CONTENT_SECURITY_POLICY.replace("script-src 'self'", f"script-src 'self' {hashes}")
    return HTMLResponse(html, headers={"Content-Security-Policy": policy})


def _script_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode()).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"
