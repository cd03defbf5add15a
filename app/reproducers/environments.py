"""What an environment must hold for a reproducer: the distributions a process imported,
pinned as installed, and their wheels fetched and installed for another machine.

A reproducer's process knows best what it needs: after loading its target (and errkb's harness,
whose matcher checks the error), the modules it imported name their distributions. That
list, not a hand-kept one, is what a GPU machine's bundle carries (app/reproducers/bundle.py);
what such a machine brings with its own torch (torch, what torch requires, CUDA's packages)
is left out.

Imported by the reproducer scripts' harness in `--bundle` mode: standard library only at the top.
"""

import importlib.metadata
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# What a GPU machine brings with its own torch: never bundled (CUDA's packages are GBs).
MACHINE_BRINGS = ("torch",)
MACHINE_PREFIXES = ("nvidia-", "triton", "pytorch-triton", "cuda-")
OWN_PACKAGES = frozenset({"app", "__main__", "__mp_main__"})
OWN_DISTRIBUTION = "errkb"  # the working tree itself, which the GPU machine is handed
PIP_TIMEOUT_S = 900


def normal_name(name: str) -> str:
    """PEP 503's normal form of a distribution's name: `Typing_Extensions`, `typing-extensions`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_closure(requirements: Iterable[str], extras: Iterable[str] = ()) -> set[str]:
    """The distributions (normal names) these requirements install, read from the installed
    packages' own metadata as pip would resolve them; one not installed ends its branch."""
    from packaging.markers import default_environment
    from packaging.requirements import InvalidRequirement, Requirement

    environment = {key: str(value) for key, value in default_environment().items()}
    wanted = [(line, frozenset(extras)) for line in requirements]
    seen: set[tuple[str, frozenset[str]]] = set()
    while wanted:
        line, asked = wanted.pop()
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker and not any(
            requirement.marker.evaluate({**environment, "extra": extra})
            for extra in (asked or {""})
        ):
            continue
        key = (normal_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            below = importlib.metadata.requires(requirement.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        wanted.extend((line, frozenset(requirement.extras)) for line in below)
    return {name for name, _ in seen}


def imported_distributions(environment: Path | None = None) -> list[dict[str, Any]]:
    """The distributions whose modules this process imported, pinned as installed, less
    what a GPU machine brings itself and errkb's own; each says whether it came from the
    release's requirement environment (`environment`, a folder installed by pip --target).

    What was imported, not what the metadata says could be: a release's requirements hold
    a whole serving stack (transformers, openai, aiohttp) that a target module never
    loads, and would not fit a bundle."""
    providers = importlib.metadata.packages_distributions()
    imported: set[str] = set()
    for module in list(sys.modules):
        top = module.partition(".")[0]
        if top not in sys.stdlib_module_names and top not in OWN_PACKAGES:
            imported.update(normal_name(name) for name in providers.get(top, ()))
    brought = requirement_closure(MACHINE_BRINGS)
    found = []
    for name in sorted(imported - brought - {OWN_DISTRIBUTION}):
        if name.startswith(MACHINE_PREFIXES):
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        root = Path(str(distribution.locate_file(""))).resolve()
        in_environment = environment is not None and root.is_relative_to(environment.resolve())
        found.append({"name": name, "version": distribution.version, "environment": in_environment})
    return found


def download_wheels(
    pins: Iterable[str], folder: Path, python: str, platforms: Iterable[str]
) -> dict[str, str]:
    """Download the wheel of each `name==version` for that Python and platform into `folder`;
    the pins that have none, with pip's last words."""
    folder.mkdir(parents=True, exist_ok=True)
    options = ["--only-binary=:all:", "--no-deps", "--implementation", "cp"]
    options += ["--python-version", python, "--disable-pip-version-check", "-q"]
    for platform_tag in platforms:
        options += ["--platform", platform_tag]
    wanted = sorted(set(pins))
    failed: dict[str, str] = {}
    command = [sys.executable, "-m", "pip", "download", *options, "-d", str(folder)]
    if not wanted or _pip([*command, *wanted])[0] == 0:
        return failed
    for pin in wanted:  # one at a time, to name the ones that have no wheel
        code, said = _pip([*command, pin])
        if code != 0:
            failed[pin] = said
    return failed


def _pip(command: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return 1, str(error)
    lines = (done.stderr or done.stdout).strip().splitlines()
    return done.returncode, (lines[-1] if lines else "")


def folder_bytes(folder: Path) -> int:
    """The size of every file below a folder."""
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def unpack_wheels(wheels: Iterable[Path], into: Path) -> int:
    """Install wheels by unpacking them (what pip --target does for these: no scripts run);
    a wheel's `.data/purelib` and `platlib` go where the package goes. How many."""
    count = 0
    into.mkdir(parents=True, exist_ok=True)
    for wheel in sorted(wheels):
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                parts = member.filename.split("/")
                if member.is_dir() or ".." in parts or member.filename.startswith("/"):
                    continue
                if len(parts) > 2 and parts[0].endswith(".data"):
                    if parts[1] not in ("purelib", "platlib"):
                        continue
                    parts = parts[2:]
                target = into.joinpath(*parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(member))
        count += 1
    return count
