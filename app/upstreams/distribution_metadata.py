"""What a distribution's metadata says: the installed version of a package, a release's
project URLs and the GitHub repository they name (harvest derives the upstream repository
from them rather than from a table of its own), and the exact releases it requires."""

import importlib.metadata
import re
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

_GITHUB_REPO = re.compile(r"https?://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?(?:[/#?]|$)")


def metadata_urls(distribution: importlib.metadata.Distribution) -> dict[str, str]:
    """A distribution's Project-URLs by label, and its Home-page, from its METADATA."""
    metadata = distribution.metadata
    urls: dict[str, str] = {}
    for entry in metadata.get_all("Project-URL") or []:
        label, _, url = entry.partition(",")
        urls[label.strip()] = url.strip()
    home = (metadata.get_all("Home-page") or [""])[0].strip()
    if home:
        urls["Home-page"] = home
    return urls


def github_repo_of(urls: dict[str, str]) -> str | None:
    """`owner/name` of the first GitHub URL among these, e.g. vllm-project/vllm."""
    for url in urls.values():
        match = _GITHUB_REPO.match(url)
        if match:
            return f"{match[1]}/{match[2]}"
    return None


def installed_version(name: str) -> str | None:
    """The version of an installed distribution without its local label (`2.13.0+cpu` ->
    `2.13.0`), or None when it is not installed."""
    try:
        return importlib.metadata.version(name).split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return None


def pinned_requirement(
    root: Path, distribution: str, names: Iterable[str]
) -> tuple[str, str] | None:
    """The first of `names` (distributions) that the release of `distribution` unpacked or
    installed at `root` requires at one exact version (`sgl-kernel==0.3.7`, in any extra), as
    (name, version), from its `.dist-info/METADATA`; None when it requires none of them so,
    or has no metadata there."""
    wanted = {canonicalize_name(name) for name in names}
    stem = re.sub(r"[-_.]+", "_", distribution).lower()
    for dist_info in sorted(root.glob(f"{stem}-*.dist-info")):
        metadata = importlib.metadata.PathDistribution(dist_info).metadata
        for line in metadata.get_all("Requires-Dist") or []:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            pins = [spec.version for spec in requirement.specifier if spec.operator == "=="]
            if canonicalize_name(requirement.name) in wanted and len(pins) == 1:
                return requirement.name, pins[0]
    return None
