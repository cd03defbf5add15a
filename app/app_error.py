"""The one error type of errkb.

Services raise `AppError` for anything the caller got wrong or asked for in vain; the API
answers it as RFC 9457 problem details (`application/problem+json`), the web
pages as a page, the CLI as a message. Nothing else is caught
and reshaped, so an unexpected error stays visible as a bug.
"""

from dataclasses import dataclass, field

PROBLEM_MEDIA = "application/problem+json"
PROBLEM_TYPE = "about:blank"
"""RFC 9457's type for a problem that the status and title say all about."""


@dataclass
class AppError(Exception):
    """A failure with an HTTP status, a short title and the reason in words; `retry_after_s`
    (a 503's or 429's Retry-After) says when the same request may succeed; `more_headers`
    are the others its status calls for (a 405's Allow, a 401's WWW-Authenticate)."""

    status: int
    title: str
    detail: str
    errors: list[dict[str, str]] = field(default_factory=list)
    retry_after_s: int | None = None
    more_headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.title}: {self.detail}"

    def body(self, instance: str | None = None) -> dict:
        """The RFC 9457 problem details: type, title, status, detail, the request path as
        `instance` when known, and `errors` naming each refused field."""
        content: dict = {
            "type": PROBLEM_TYPE,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if instance is not None:
            content["instance"] = instance
        if self.errors:
            content["errors"] = self.errors
        return content

    def headers(self) -> dict[str, str]:
        """The reply's headers: Retry-After when the request is worth retrying, and the
        others its status calls for."""
        retry = {} if self.retry_after_s is None else {"Retry-After": str(self.retry_after_s)}
        return retry | self.more_headers


def not_found(what: str) -> AppError:
    """A 404 naming what was looked for."""
    return AppError(404, "Not found", f"{what} does not exist")
