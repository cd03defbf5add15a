"""A small typed client of errkb's JSON API, for the CLI's client mode, `errkb run`,
`errkb explain`, the Python hook and the pytest plugin.

It needs nothing beyond httpx and the standard library: the hook and the plugin load it inside
other people's programs and test runs, where errkb's server stack has no business. Every
failure becomes one ClientError whose text is a single line a person can act on.
"""

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

USER_AGENT = "errkb-client"


class ClientError(Exception):
    """No usable answer: the message is one line that says why (and what to do, if known);
    `status` is the HTTP status of a refusal (a 4xx blames the request, not the server)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ApiClient:
    """The three questions the client asks one server: match, search, a record."""

    def __init__(self, base_url: str, timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout_s,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            follow_redirects=True,  # an absorbed draft's id redirects to its record (308)
        )

    def __enter__(self) -> "ApiClient":
        return self

    def __exit__(self, *_exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def match(self, text: str, limit: int) -> dict[str, Any]:
        """POST /api/match: the exceptions in `text` and the records that explain them."""
        return self._call("POST", "/api/match", params={"limit": limit}, json={"text": text})

    def search(
        self, query: str, filters: Mapping[str, str], limit: int, cursor: str | None
    ) -> dict[str, Any]:
        """GET /api/search: `filters` are its query parameters (repo, errorClass...)."""
        params = {"q": query, **filters, "limit": limit} | ({"cursor": cursor} if cursor else {})
        return self._call("GET", "/api/search", params=params)

    def record(self, record_id: str) -> dict[str, Any]:
        """GET /api/errors/{id}: the record and everything its page shows."""
        return self._call("GET", f"/api/errors/{quote(record_id, safe='')}")

    def link(self, record_id: str) -> str:
        """The address of the record's page on this server."""
        return f"{self.base_url}/errors/{quote(record_id, safe='')}"

    def _call(self, method: str, path: str, **request: Any) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, **request)
        except httpx.TimeoutException:
            raise ClientError(
                f"{self.base_url} did not answer within {self.timeout_s:g} s"
            ) from None
        except httpx.UnsupportedProtocol:
            raise ClientError(f"{self.base_url} is not an http:// or https:// URL") from None
        except (httpx.TransportError, httpx.InvalidURL) as error:
            raise ClientError(f"cannot reach {self.base_url}: {_reason(error)}") from None
        if response.status_code >= 400:
            raise ClientError(self._refusal(response), response.status_code)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ClientError(
                f"{self.base_url}{path} answered {response.status_code} without a JSON object: "
                "is this an errkb server?"
            )
        return body

    def _refusal(self, response: httpx.Response) -> str:
        """One line for an error status, from its problem details (RFC 9457) when it has
        them; a 503 says when to try again."""
        try:
            problem = response.json()
        except ValueError:
            problem = None
        title = response.reason_phrase
        detail = ""
        if isinstance(problem, dict):
            title = str(problem.get("title") or title)
            detail = str(problem.get("detail") or "")
        line = f"{self.base_url} answered {response.status_code} {title}"
        if detail and detail != title:
            line += f": {detail}"
        retry = response.headers.get("Retry-After")
        if response.status_code == 503:
            line += f"; retry after {retry} s" if retry else "; try again later"
        return " ".join(line.split())


def _reason(error: Exception) -> str:
    """The operating system's words for a failed connection ("Connection refused"), without
    httpx's and the socket's wrapping ("[Errno 111] ...")."""
    reason = str(error) or type(error).__name__
    if "] " in reason and reason.startswith("[Errno"):
        reason = reason.split("] ", 1)[1]
    return reason
