"""The upstream projects errkb knows, one module each: vLLM, SGLang, PyTorch, transformers,
Triton.

Everything else asks this registry: which repository a package folder belongs to, where a
repository keeps its package, which releases to harvest, which log formats name a project.
"""

from app.upstreams import sglang, torch, transformers, triton, vllm
from app.upstreams.base import BundledPackage, UpstreamProject

UPSTREAMS: tuple[UpstreamProject, ...] = (
    vllm.PROJECT,
    sglang.PROJECT,
    torch.PROJECT,
    transformers.PROJECT,
    triton.PROJECT,
)
BY_PACKAGE = {project.package: project for project in UPSTREAMS}
BY_REPO = {project.repo: project for project in UPSTREAMS}
BUNDLED: dict[str, tuple[UpstreamProject, BundledPackage]] = {
    bundled.package: (project, bundled) for project in UPSTREAMS for bundled in project.bundled
}
"""A bundled package's import name -> the project whose releases require it, and it."""

VLLM, SGLANG, TORCH = vllm.PROJECT.repo, sglang.PROJECT.repo, torch.PROJECT.repo


def package_project(package: str) -> UpstreamProject | None:
    """The project whose releases hold a known package folder: its own (`torch`), or one
    it bundles (SGLang's `sgl_kernel`)."""
    bundled = BUNDLED.get(package)
    return bundled[0] if bundled is not None else BY_PACKAGE.get(package)


def package_repo(package: str) -> str | None:
    """The repository of a known package folder (`torch` -> `pytorch/pytorch`, SGLang's
    bundled `sgl_kernel` -> `sgl-project/sglang`)."""
    project = package_project(package)
    return project.repo if project else None


def package_prefix(package: str) -> str:
    """Where a known package folder sits in its repository (`python/` for `sglang`,
    `sgl-kernel/python/` for `sgl_kernel`, nothing for `vllm`)."""
    if package in BUNDLED:
        return BUNDLED[package][1].path_prefix
    project = BY_PACKAGE.get(package)
    return project.path_prefix if project else ""


def path_prefix(repo: str) -> str:
    """Where a repository keeps its package folder (`python/` for SGLang, else nothing)."""
    project = BY_REPO.get(repo)
    return project.path_prefix if project else ""


def current_releases() -> list[str]:
    """What `errkb serve` harvests before it is ready."""
    return [project.current_release for project in UPSTREAMS if project.current_release]


def bundled_file(repo: str, file_path: str) -> bool:
    """Whether a repository path lies in a package its project bundles (SGLang's
    `sgl-kernel/python/sgl_kernel/...`), which another distribution ships."""
    project = BY_REPO.get(repo)
    bundled = project.bundled if project else ()
    return any(file_path.startswith(package.path_prefix) for package in bundled)


def older_releases() -> list[str]:
    """What it harvests in the background afterwards, project by project."""
    return [release for project in UPSTREAMS for release in project.older_releases]


def checks() -> dict[str, str]:
    """Every known check function -> the exception it raises when its condition fails."""
    return {name: error for project in UPSTREAMS for name, error in project.checks.items()}


def error_responses() -> frozenset[str]:
    """Every known function that answers an HTTP error response built from a message."""
    return frozenset(name for project in UPSTREAMS for name in project.error_responses)


def keyword_suffixes() -> dict[str, tuple[str, ...]]:
    """Every known exception class that appends its keyword arguments to its message."""
    return {
        name: keywords
        for project in UPSTREAMS
        for name, keywords in project.keyword_suffixes.items()
    }


def native_exceptions() -> dict[str, tuple[str, ...]]:
    """Every exception class the projects' compiled code defines -> its bases."""
    return {
        name: bases for project in UPSTREAMS for name, bases in project.native_exceptions.items()
    }
