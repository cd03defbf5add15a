"""What several commands share: the option every command has (--database-url, read into the
settings once per invocation and handed down: the CLI is an entry point) and one option per
record filter for the commands that list records."""

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from app.config import Settings
from app.records.filters import RecordFilters


def settings_of(ctx: typer.Context) -> Settings:
    """The settings `configure` read for this invocation (the CLI is an entry point)."""
    return ctx.find_root().obj


def configure(
    ctx: typer.Context,
    database_url: Annotated[
        str | None,
        typer.Option(help="SQLAlchemy URL of the store (overrides ERRKB_DATABASE_URL)."),
    ] = None,
) -> None:
    """Options shared by every command."""
    # Read afresh on each invocation and handed down; the environment is left as it is.
    ctx.obj = Settings(database_url=database_url) if database_url else Settings()


def with_filter_options(command: Callable[..., None]) -> Callable[..., None]:
    """Give a command one option per record filter (--repo, --error-class, --tag...) and
    hand it the RecordFilters they make, validated as the API validates its query: a filter
    added to app.records.filters reaches the CLI by itself."""
    fields = RecordFilters.model_fields
    flags = {name: "--" + name.replace("_", "-") for name in fields}
    flags |= {field.alias: flags[name] for name, field in fields.items() if field.alias}
    options = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[str | None, typer.Option(flags[name], help=field.description)],
        )
        for name, field in fields.items()
    ]
    signature = inspect.signature(command)
    kept = [param for param in signature.parameters.values() if param.name != "filters"]

    @functools.wraps(command)
    def with_filters(*args: Any, **kwargs: Any) -> None:
        given = {name: kwargs.pop(name) for name in fields}
        try:
            filters = RecordFilters.model_validate(
                {name: value for name, value in given.items() if value is not None}
            )
        except ValidationError as error:
            problem = error.errors()[0]
            hint = flags.get(str(problem["loc"][0]) if problem["loc"] else "", None)
            raise typer.BadParameter(problem["msg"], param_hint=hint) from None
        command(*args, filters=filters, **kwargs)

    with_filters.__signature__ = signature.replace(parameters=[*kept, *options])  # type: ignore[attr-defined]
    return with_filters
