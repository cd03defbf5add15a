"""The `errkb` command, one module per group of commands; app.cli.commands puts them together.
`main` is imported here because the console script (pyproject.toml) names `app.cli:main`."""

from app.cli.commands import main

__all__ = ["main"]
