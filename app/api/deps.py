"""Dependencies shared by the routers, as annotated types (ARCHITECTURE.md, convention 4)."""

import hmac
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlmodel import Session

from app.config import Settings
from app.db import session_scope
from app.errors import AppError
from app.search import SearchFilters


def get_settings_dep(request: Request) -> Settings:
    """The settings the app was built with (tests build apps with their own)."""
    return request.app.state.settings


def get_session(request: Request) -> Iterator[Session]:
    """A database session for one request."""
    yield from session_scope(request.app.state.engine)


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]
_bearer = HTTPBearer(auto_error=False, description="ERRKB_ADMIN_TOKEN")


def require_admin(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """Allow a write only with `Authorization: Bearer <ERRKB_ADMIN_TOKEN>`.

    With no token configured, writes are off (403) rather than open to anyone. The token is
    compared in constant time so its prefix cannot be guessed from response times.
    """
    if not settings.admin_token:
        raise AppError(403, "Writes disabled", "set ERRKB_ADMIN_TOKEN to enable writes")
    supplied = credentials.credentials if credentials else ""
    if not hmac.compare_digest(supplied.encode(), settings.admin_token.encode()):
        raise AppError(401, "Unauthorized", "a valid 'Authorization: Bearer <token>' is required")


AdminDep = Annotated[None, Depends(require_admin)]


def search_filters(
    repo: str | None = None,
    error_class: Annotated[str | None, Query(alias="errorClass")] = None,
    tag: str | None = None,
) -> SearchFilters:
    """The filters of a search, read the same way by /api/search and the search page."""
    return SearchFilters(repo, error_class, tag)


SearchFiltersDep = Annotated[SearchFilters, Depends(search_filters)]
