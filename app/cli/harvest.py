"""`errkb harvest`: draft records from the raise sites of upstream releases."""

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from app.cli.options import settings_of
from app.config import Settings
from app.store.engine import open_store, unit_of_work

if TYPE_CHECKING:  # imported where used: the commands that need neither start faster
    from typer._click._termui_impl import ProgressBar

    from app.harvest import HarvestResult


def harvest_releases(
    settings: Settings, specs: list[str], repo: str | None, ref: str | None
) -> None:
    """Harvest each release into the store, with a progress bar and a summary per package."""
    from app.harvest import drafts
    from app.upstreams.release_cache import Upstream

    engine = open_store(settings)
    releases = Upstream(settings.cache_dir, build_libraries=settings.cuda_build_libraries)
    for spec in specs:
        try:
            release = drafts.resolve_release(spec, repo=repo, ref=ref, releases=releases)
        except drafts.ReleaseError as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(2) from None
        with _FileProgress(f"harvesting {spec}") as progress, unit_of_work(engine) as session:
            result, counts = drafts.harvest_release(session, release, progress)
        skipped = ", ".join(f"{reason} {n}" for reason, n in result.skipped.most_common())
        typer.echo(
            f"{spec} ({release.repo}@{release.ref}): {result.files} files, "
            f"{result.raise_sites} raise sites, {result.log_sites} log sites"
            f"{_native(result)}; "
            f"drafts created {counts.created}, "
            f"updated {counts.updated}, unchanged {counts.unchanged}, "
            f"sites of reviewed records {counts.claimed} (absorbed {counts.absorbed}), "
            f"gone {counts.gone}, "
            f"invalid {counts.invalid}; skipped: {skipped or 'none'}"
        )


def _native(result: "HarvestResult") -> str:
    """The native sites a harvest read, where it read any: checks in C++/CUDA sources,
    compiled libraries' messages, the CUDA runtime's and NCCL's error codes."""
    counts = (
        (result.native_sites, "native checks"),
        (result.library_sites, "library messages"),
        (result.nvidia_errors, "CUDA and NCCL error codes"),
    )
    return "".join(f", {n} {what}" for n, what in counts if n)


class _FileProgress:
    """A progress bar fed by harvest's per-file callback (its total is known on the first)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: ProgressBar[int] | None = None

    def __enter__(self) -> "_FileProgress":
        return self

    def __call__(self, _done: int, total: int, _path: str) -> None:
        if self.bar is None:
            self.bar = typer.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(1)

    def __exit__(self, *exc_info: Any) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc_info)


def harvest_command(
    ctx: typer.Context,
    specs: Annotated[
        list[str],
        typer.Argument(
            help="vllm==0.33.0 (downloaded), an installed distribution (torch), "
            "or a source folder (with --repo and --ref)."
        ),
    ],
    repo: Annotated[
        str | None, typer.Option(help="owner/name on GitHub (required for a source folder).")
    ] = None,
    ref: Annotated[
        str | None, typer.Option(help="Tag or commit the drafts' GitHub links pin.")
    ] = None,
) -> None:
    """Harvest a draft record for every raise site of upstream releases."""
    harvest_releases(settings_of(ctx), specs, repo, ref)
