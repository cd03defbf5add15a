"""What a distribution's metadata says: the installed version of a package, a release's
project URLs and the GitHub repository they name (harvest derives the upstream repository
from them rather than from a table of its own)."""

import importlib.metadata
import re

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
