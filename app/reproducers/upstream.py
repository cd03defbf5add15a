"""Released upstream packages (vLLM, SGLang): download, cache, unpack and load target modules.

Reproducers prove records against the real upstream code, which is never copied into this
repo: the release's source distribution (vLLM's is a tenth of its wheel), or its
wheel when it has none, is fetched into the cache directory (`Upstream(settings.cache_dir)`),
its Python sources are unpacked once, and only the modules a reproducer targets are imported.
A project whose compiled core is not in its Python sources (torch; `installed` in
app/upstreams) is run as installed from the index by the `reproducers` extra, and refused
unless the installed version is the one the reproducer pins.
The same unpacked tree serves the harvest of raise sites (`ensure_unpacked`, `project_urls`,
`github_repo`) and the drift check.

Nothing here imports torch: the upstream modules (and torch with them) are only imported in
the reproducer subprocesses, through `load_module`.
"""

import ast
import fcntl
import functools
import hashlib
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from app import upstreams

if TYPE_CHECKING:
    from app.reproducers.imports import Needs

WHEELS_DIR = "wheels"
SDISTS_DIR = "sdists"
DEFAULT_INDEX = "https://pypi.org/simple"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"  # PEP 691
INDEX_TIMEOUT_S = 60
DOWNLOAD_CHUNK = 1 << 20
# Top folders of an sdist that hold no part of the package: half of vLLM's Python files.
SDIST_SKIPPED = frozenset({"tests", "benchmarks", "examples", "docs", "tools", ".buildkite"})
SRC_LAYOUT = "src"  # the folder a src-layout sdist keeps its package in
UNPACKED_DIR = "unpacked"
NATIVE_DIR = "native"  # a release's C++/CUDA sources, unpacked apart from its Python
NATIVE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hpp")
ENVS_DIR = "envs"  # what a release's modules import at load, installed for its reproducers
ENVIRONMENT_MANIFEST = "errkb-environment.json"  # what an environment was made to hold
REQUIREMENTS_DIR = "requirements"  # wheels of requirements, read for the names they ship
LOCKS_DIR = "locks"
PIP_TIMEOUT_S = 600
ENVIRONMENT_TIMEOUT_S = 1800  # a release's environment: a GB of wheels on a loaded machine
_GITHUB_REPO = re.compile(r"https?://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?(?:[/#?]|$)")


class UpstreamError(RuntimeError):
    """A release could not be downloaded, unpacked or imported; the message says why.

    Reproducers turn it into an "error" result (never a pass), so the cause must be in it.
    """


class StubUsedError(RuntimeError):
    """Upstream code reached a stubbed name: the stub list of the reproducer is wrong."""


class Stub:
    """Stands in for an upstream name that the tested classes never use.

    Calling it or reading one of its attributes raises, so a stub can never make a check
    pass silently.
    """

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __call__(self, *_args: object, **_kwargs: object) -> None:
        raise StubUsedError(f"{self._qualname} is stubbed by errkb and must not be called")

    def __getattr__(self, attr: str) -> object:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise StubUsedError(f"{self._qualname}.{attr} is stubbed by errkb and must not be used")


def _runs_installed(name: str) -> bool:
    """Whether reproducers run this package as installed rather than unpacked."""
    project = upstreams.BY_PACKAGE.get(name)
    return project is not None and project.installed


def _platform_options(name: str) -> list[str]:
    """pip's options for the wheel whose sources stand for every platform's, where the
    project names one (`UpstreamProject.sources_platform`)."""
    project = upstreams.BY_PACKAGE.get(name)
    if project is None or project.sources_platform is None:
        return []
    return ["--platform", project.sources_platform]


def _release(name: str, version: str) -> str:
    return f"{name}-{version}"


def _find_wheel(folder: Path, name: str, version: str) -> Path | None:
    stem = re.sub(r"[-_.]+", "_", name).lower()
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    return found[0] if found else None


def _normalized(name: str) -> str:
    """PEP 503's normal form of a project name: `SGLang_x` -> `sglang-x`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _sdist_name(name: str, version: str) -> str:
    return f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}.tar.gz"


def _find_sdist(folder: Path, name: str, version: str) -> Path | None:
    path = folder / _sdist_name(name, version)
    return path if path.is_file() else None


@contextmanager
def _quiet_pip() -> Iterator[None]:
    """pip's internals import its vendored pkg_resources, which warns that it is deprecated:
    pip's business, not this service's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


def _index_url() -> str:
    """The index pip is configured with (PIP_INDEX_URL, pip.conf), else PyPI's."""
    with _quiet_pip():
        from pip._internal.configuration import Configuration, ConfigurationError

    try:
        configuration = Configuration(isolated=False)
        configuration.load()
        found = [value for key, value in configuration.items() if key.endswith(".index-url")]
    except ConfigurationError:
        found = []
    urls = [url for url in found if url.startswith(("https://", "http://"))]
    return (urls[-1] if urls else DEFAULT_INDEX).rstrip("/")


def _fetch(session: Any, entry: dict[str, Any], target: Path) -> Path:
    """Download one index file to ``target`` (atomically), checking its sha256."""
    digest = hashlib.sha256()
    tmp = target.with_name(f".{target.name}.part")
    with session.get(entry["url"], stream=True, timeout=PIP_TIMEOUT_S) as response:
        response.raise_for_status()
        with open(tmp, "wb") as handle:
            for chunk in response.iter_content(DOWNLOAD_CHUNK):
                digest.update(chunk)
                handle.write(chunk)
    expected = entry.get("hashes", {}).get("sha256")
    if expected and digest.hexdigest() != expected:
        tmp.unlink(missing_ok=True)
        raise UpstreamError(f"{target.name}: sha256 {digest.hexdigest()} is not {expected}")
    tmp.rename(target)
    return target


def _unpack_sdist(sdist: Path, name: str, version: str, into: Path) -> None:
    """The sdist's Python files, without its top folder (nor its tests, benchmarks and
    examples), and its PKG-INFO as the `.dist-info/METADATA` a wheel has (the same core
    metadata), so the tree reads alike.

    Members are written one by one: only regular files, on paths inside ``into``."""
    stem = re.sub(r"[-_.]+", "_", name).lower()
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive:
            parts = member.name.split("/")[1:]
            if not member.isfile() or not parts or ".." in parts or member.name.startswith("/"):
                continue
            if parts[0] == SRC_LAYOUT and len(parts) > 2:  # src/transformers/...: as in a wheel
                parts = parts[1:]
            relative = "/".join(parts)
            if parts[0] in SDIST_SKIPPED:
                continue
            if relative == "PKG-INFO":
                target = into / f"{stem}-{version}.dist-info" / "METADATA"
            elif relative.endswith(".py"):
                target = into / relative
            else:
                continue
            source = archive.extractfile(member)
            if source is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())


def _unpack_native(archive: Path, folders: tuple[str, ...], into: Path) -> None:
    """The C++/CUDA files of an sdist (without its top folder) or a wheel under `folders`;
    only regular files, on paths inside ``into``."""

    def write(relative: str, data: bytes) -> None:
        parts = relative.split("/")
        if ".." in parts or relative.startswith("/"):
            return
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def wanted(relative: str) -> bool:
        return relative.startswith(folders) and relative.endswith(NATIVE_SUFFIXES)

    if archive.name.endswith(".tar.gz"):
        with tarfile.open(archive, "r:gz") as sdist:
            for member in sdist:
                relative = member.name.partition("/")[2]
                if member.isfile() and wanted(relative):
                    source = sdist.extractfile(member)
                    if source is not None:
                        write(relative, source.read())
        return
    with zipfile.ZipFile(archive) as wheel:
        for name in wheel.namelist():
            if wanted(name):
                write(name, wheel.read(name))


def _wanted(member: str) -> bool:
    """Python sources and the dist-info: compiled extensions and data are most of a wheel
    and no target module or harvest needs them."""
    top = member.split("/", 1)[0]
    return not member.endswith("/") and (member.endswith(".py") or top.endswith(".dist-info"))


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


def _empty_package(qualname: str, folder: Path) -> ModuleType:
    """A package module whose __init__ runs only when a name is asked of it, searched in
    `folder` for submodules.

    Importing a submodule never runs the package's __init__ (vLLM's imports the whole serving
    stack); a target that imports a name from its package (`from vllm.config import
    ModelConfig`) gets it from the real __init__, run then, once, in the package's namespace.
    """
    spec = importlib.machinery.ModuleSpec(qualname, None, is_package=True)
    spec.submodule_search_locations = [str(folder)]
    module = importlib.util.module_from_spec(spec)
    init = folder / "__init__.py"

    def run_init_for(attr: str) -> object:
        namespace = module.__dict__
        literals = _literal_dunders(init)
        if attr in literals:  # `__version__ = "5.24.0"`: read, not run (its imports cycle)
            namespace[attr] = literals[attr]
            return literals[attr]
        if (attr.startswith("__") and attr not in _bound_names(init)) or namespace.get(
            "__getattr__"
        ) is not run_init_for:
            raise AttributeError(f"module {qualname!r} has no attribute {attr!r}")
        del namespace["__getattr__"]  # once: the __init__ may define its own
        if init.is_file():
            namespace["__file__"] = str(init)
            exec(compile(init.read_text(encoding="utf-8"), str(init), "exec"), namespace)
        if attr in namespace:
            return namespace[attr]
        if callable(namespace.get("__getattr__")):
            return namespace["__getattr__"](attr)
        raise AttributeError(f"module {qualname!r} has no attribute {attr!r}")

    module.__dict__["__getattr__"] = run_init_for
    sys.modules[qualname] = module
    parent, _, child = qualname.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


@functools.lru_cache(maxsize=64)
def _init_statements(init: Path) -> tuple[ast.stmt, ...]:
    """The top-level statements of a package's `__init__`, parsed once for the questions an
    emptied package asks of it on every attribute; none when it cannot be read."""
    try:
        return tuple(ast.parse(init.read_text(encoding="utf-8")).body)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()


@functools.lru_cache(maxsize=64)
def _bound_names(init: Path) -> frozenset[str]:
    """The names a package's `__init__` binds at its top level (`__version__`, imported
    ones): a dunder asked of an emptied package runs the `__init__` only when it is one of
    these (transformers' modules import `__version__` from theirs), never for what the
    import system and `inspect` probe (`__file__`, `__wrapped__`)."""
    names: set[str] = set()
    for statement in _init_statements(init):
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in statement.names)
    return frozenset(names)


@functools.lru_cache(maxsize=64)
def _literal_dunders(init: Path) -> Mapping[str, Any]:
    """The dunders a package's `__init__` sets to a literal at its top level (transformers'
    `__version__`): their value, read from the source. Running that `__init__` for one of
    them, from a submodule its own imports reach, would meet that submodule half loaded."""
    found: dict[str, Any] = {}
    for statement in _init_statements(init):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and target.id.startswith("__"):
                try:
                    found[target.id] = ast.literal_eval(statement.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    continue
    return found


def _stub_module(qualname: str) -> ModuleType:
    spec = importlib.machinery.ModuleSpec(qualname, None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualname] = module
    return module


def installed_version(name: str) -> str | None:
    """The version of an installed distribution without its local label (`2.13.0+cpu` ->
    `2.13.0`), or None when it is not installed."""
    try:
        return importlib.metadata.version(name).split("+")[0]
    except importlib.metadata.PackageNotFoundError:
        return None


def _manifest(path: Path) -> dict[str, Any]:
    """What an environment says it holds (`ensure_environment`); empty when it says nothing."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _install_environment(target: Path, specs: list[str], held: dict[str, Any]) -> None:
    """Install `specs` and what they require into `target`, beside what it holds (`held`,
    its manifest).

    pip resolves them from the index's metadata (torch held at the release installed here,
    so nothing pulls in another torch or CUDA's packages); what this interpreter or the
    folder already has is left out, and so is what serves only an accelerator
    (`imports.accelerator_only`: a requirement of a requirement, named in the manifest as
    are the imports whose own requirement serves only one). The rest is installed without
    dependencies into a new folder, whose entries then join the target (new names only: a
    folder in use only grows). Specs that cannot be resolved together are resolved one by
    one and those that fail named in the manifest."""
    from app.reproducers import imports

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        constraints = tmp / "constraints.txt"
        torch = installed_version("torch")
        constraints.write_text(f"torch=={torch}\n" if torch else "", encoding="utf-8")
        items = imports.resolve(specs, constraints=constraints)
        refused: dict[str, str] = dict(held.get("refused", {}))
        if not items:
            own: list[dict] = []  # each spec's own release first: its pin wins over another's
            for spec in specs:
                alone = imports.resolve([spec], constraints=constraints)
                if not alone:
                    refused[spec] = "pip cannot resolve it with the torch installed here"
                name = _normalized(re.split(r"[\s<>=!~;\[(]", spec, maxsplit=1)[0])
                own += [
                    i for i in alone if _normalized(i.get("metadata", {}).get("name", "")) == name
                ]
                items += alone
            items = own + items
        constraints.unlink()
        installed = set(held.get("installed", []))
        have = {pin.partition("==")[0] for pin in installed}
        pins: dict[str, str] = {}
        accelerator: dict[str, str] = dict(held.get("accelerator_only", {}))
        for item in items:
            metadata = item.get("metadata", {})
            name = _normalized(metadata.get("name", ""))
            if not name or name in pins or name in have or installed_version(name):
                continue
            if why := imports.accelerator_only(metadata):
                accelerator[f"{name}=={metadata.get('version')}"] = why
            else:
                pins[name] = f"{name}=={metadata.get('version')}"
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        command += ["--disable-pip-version-check", "--only-binary=:all:", "--target", str(tmp)]
        if pins:
            done = subprocess.run(
                [*command, *sorted(pins.values())],
                capture_output=True,
                text=True,
                timeout=ENVIRONMENT_TIMEOUT_S,
                check=False,
            )
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                raise UpstreamError(
                    f"pip install failed (exit {done.returncode}): " + " | ".join(tail)
                )
        manifest = {
            "specs": specs,
            "installed": sorted(installed | set(pins.values())),
            "missing": held.get("missing", {}),
            "refused": refused,
            "accelerator_imports": held.get("accelerator_imports", {}),
            "accelerator_only": accelerator,
        }
        if not target.is_dir():
            tmp.rename(target)
        else:
            for entry in tmp.iterdir():
                if not (target / entry.name).exists():
                    entry.rename(target / entry.name)
        (target / ENVIRONMENT_MANIFEST).write_text(json.dumps(manifest, indent=1), "utf-8")
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UpstreamError(f"installing {target.name}'s environment failed: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Upstream:
    """The releases cached under one folder (settings.cache_dir), handed down from the entry
     points (create_app, the CLI, a reproducer script) instead of read from the settings here
    ."""

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir.expanduser().resolve()

    def unpacked_dir(self, name: str, version: str) -> Path:
        """Where `ensure_unpacked` puts a release; its existence means the unpack finished."""
        return self.cache_dir / UNPACKED_DIR / _release(name, version)

    def cached_root(self, name: str, version: str) -> Path | None:
        """Where the release's package folder lies when it is here already: unpacked in the
        cache, or the installed distribution of that release; None otherwise (nothing is
        downloaded: a match reads source lines from here)."""
        unpacked = self.unpacked_dir(name, version)
        if unpacked.is_dir():
            return unpacked
        if installed_version(name) == version:
            return Path(str(importlib.metadata.distribution(name).locate_file(""))).resolve()
        return None

    @contextmanager
    def _locked(self, name: str, version: str) -> Iterator[None]:
        """Serialise download and unpack of one release across concurrent reproducer runs."""
        locks = self.cache_dir / LOCKS_DIR
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{_release(name, version)}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _download_wheel(self, name: str, version: str) -> Path:
        """The cached wheel, fetched with the ordinary pip client when it is missing.

        --only-binary keeps pip from building an sdist, which would run upstream code here.
        """
        wheels = self.cache_dir / WHEELS_DIR
        wheels.mkdir(parents=True, exist_ok=True)
        cached = _find_wheel(wheels, name, version)
        if cached is not None:
            return cached
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            *_platform_options(name),
            "-d",
            str(wheels),
            f"{name}=={version}",
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UpstreamError(f"pip download {name}=={version} failed: {exc}") from exc
        wheel = _find_wheel(wheels, name, version)
        if done.returncode != 0 or wheel is None:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise UpstreamError(
                f"pip download {name}=={version} failed (exit {done.returncode}): "
                + " | ".join(tail)
            )
        return wheel

    def _download_sdist(self, name: str, version: str) -> Path | None:
        """The cached source distribution, fetched when missing; None when the release has none.

        `pip download --no-binary` would build the sdist to read its metadata, running upstream
        code (and vLLM's build needs CUDA and torch), so the file is fetched with pip's own
        network session from the index's JSON API (PEP 691), the way pip finds files, and its
        sha256 checked against the index.
        """
        with _quiet_pip():
            from pip._internal.network.session import PipSession

        sdists = self.cache_dir / SDISTS_DIR
        cached = _find_sdist(sdists, name, version)
        if cached is not None:
            return cached
        wanted = _sdist_name(name, version)
        try:
            with _quiet_pip(), PipSession() as session:
                response = session.get(
                    f"{_index_url()}/{_normalized(name)}/",
                    headers={"Accept": SIMPLE_JSON},
                    timeout=INDEX_TIMEOUT_S,
                )
                response.raise_for_status()
                files = response.json().get("files", [])
                entry = next((f for f in files if f.get("filename", "").lower() == wanted), None)
                if entry is None:
                    return None
                sdists.mkdir(parents=True, exist_ok=True)
                return _fetch(session, entry, sdists / wanted)
        except (OSError, ValueError) as exc:  # requests' errors are OSErrors; bad JSON ValueError
            raise UpstreamError(f"fetching the sdist of {name}=={version} failed: {exc}") from exc

    def ensure_unpacked(self, name: str, version: str) -> Path:
        """Root of the unpacked release (holding the package folder and its dist-info).

        The source distribution is preferred, the wheel taken when the release has
        none; a file already in the cache is used before anything is downloaded. Unpacked once:
        into a temporary folder beside the target, renamed when complete, under a file lock, so
        concurrent runs never see half a tree. A root that already exists is used as it is,
        which lets a prepared bundle (`copy_loaded_files`) stand in for the download on a
        machine without network.
        """
        target = self.unpacked_dir(name, version)
        if target.is_dir():
            return target
        with self._locked(name, version):
            if target.is_dir():
                return target
            archive = (
                _find_sdist(self.cache_dir / SDISTS_DIR, name, version)
                or _find_wheel(self.cache_dir / WHEELS_DIR, name, version)
                or self._download_sdist(name, version)
                or self._download_wheel(name, version)
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            try:
                if archive.name.endswith(".tar.gz"):
                    _unpack_sdist(archive, name, version, tmp)
                else:
                    with zipfile.ZipFile(archive) as wheel:
                        for member in wheel.namelist():
                            if _wanted(member):
                                wheel.extract(member, tmp)
                tmp.rename(target)
            except (OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                raise UpstreamError(f"unpacking {archive.name} failed: {exc}") from exc
        return target

    def ensure_native(self, name: str, version: str, folders: Sequence[str]) -> Path | None:
        """Root of the release's C++/CUDA sources under `folders` (paths inside its sdist or
        wheel), unpacked once from the archive `ensure_unpacked` fetched, apart from the
        Python tree (whose cache predates them); None when no archive of it is cached."""
        target = self.cache_dir / NATIVE_DIR / _release(name, version)
        if target.is_dir() or not folders:
            return target if folders else None
        with self._locked(name, version):
            if target.is_dir():
                return target
            archive = _find_sdist(self.cache_dir / SDISTS_DIR, name, version) or _find_wheel(
                self.cache_dir / WHEELS_DIR, name, version
            )
            if archive is None:
                return None
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            try:
                _unpack_native(archive, tuple(f"{folder}/" for folder in folders), tmp)
                tmp.rename(target)
            except (OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                raise UpstreamError(f"unpacking {archive.name} failed: {exc}") from exc
        return target

    def environment_dir(self, name: str, version: str) -> Path:
        """Where `ensure_environment` installs a release's requirements."""
        return self.cache_dir / ENVS_DIR / _release(name, version)

    def environment_needs(self, name: str, version: str, modules: Iterable[str]) -> "Needs":
        """What these modules of the release import at load beyond this interpreter, as the
        release's requirement specs (app.reproducers.imports), and the names none provides."""
        from app.reproducers import imports

        root = self.ensure_unpacked(name, version)
        found: dict[str, str] = {}
        for module in sorted(set(modules)):
            for imported, where in imports.load_imports(root, module).items():
                found.setdefault(imported, where)
        distribution = importlib.metadata.PathDistribution(self._dist_info(name, version))
        requirements = imports.base_requirements(distribution.requires or [])
        top_levels = imports.TopLevels(self.cache_dir / WHEELS_DIR / REQUIREMENTS_DIR)
        return imports.requirement_specs(found, requirements, top_levels)

    def ensure_environment(self, name: str, version: str, modules: Iterable[str]) -> Path:
        """A folder with what these modules of the release import at load and this
        interpreter lacks (`environment_needs`), installed by pip at the versions the release
        asks for, with what they require (torch held at the installed release; what this
        interpreter has left out). Grown as later modules need more (what is there kept),
        under the release's lock. A folder without
        `errkb-environment.json` (a bundle's, unpacked for a machine without network) is used
        as it is. Reproducer scripts put it last on their path (`kit.load_target`)."""
        target = self.environment_dir(name, version)
        manifest = target / ENVIRONMENT_MANIFEST
        if target.is_dir() and not manifest.is_file():
            return target
        needs = self.environment_needs(name, version, modules)
        with self._locked(name, version):
            held = _manifest(manifest)
            if set(needs.specs) <= set(held.get("specs", [])) or (
                not needs.specs and not target.is_dir()
            ):
                return target
            wanted = sorted({*needs.specs, *held.get("specs", [])})
            held["missing"] = held.get("missing", {}) | needs.missing
            held["accelerator_imports"] = held.get("accelerator_imports", {}) | needs.accelerator
            _install_environment(target, wanted, held)
        return target

    def _dist_info(self, name: str, version: str) -> Path:
        root = self.ensure_unpacked(name, version)
        found = sorted(root.glob("*.dist-info"))
        if not found:
            raise UpstreamError(f"{root} holds no .dist-info folder")
        return found[0]

    def project_urls(self, name: str, version: str) -> dict[str, str]:
        """The release's URLs from its wheel METADATA: each Project-URL by label, and Home-page.

        Harvest derives the upstream repository from them rather than from a table of our own.
        """
        return metadata_urls(importlib.metadata.PathDistribution(self._dist_info(name, version)))

    def github_repo(self, name: str, version: str) -> str | None:
        """`owner/name` of the first GitHub URL in the release's metadata."""
        return github_repo_of(self.project_urls(name, version))

    def installed_root(self, name: str, version: str) -> Path:
        """The folder holding the installed package `name`, which must be release `version`.

        A local version label is ignored (torch's `2.13.0+cpu` is release 2.13.0); another
        release, or none installed, is an UpstreamError: a reproducer never runs a release
        other than the one it pins.
        """
        found = installed_version(name)
        if found is None:
            raise UpstreamError(
                f"{name}=={version} is not installed (the reproducers extra installs it)"
            )
        if found != version:
            raise UpstreamError(
                f"{name} {importlib.metadata.version(name)} is installed, but the reproducer"
                f" pins {version}"
            )
        return Path(str(importlib.metadata.distribution(name).locate_file(""))).resolve()

    def release_root(self, name: str, version: str) -> Path:
        """Where the release's package folder lies: installed or unpacked, as its project says."""
        if _runs_installed(name):
            return self.installed_root(name, version)
        return self.ensure_unpacked(name, version)

    def load_module(
        self,
        name: str,
        version: str,
        module: str,
        stubs: Mapping[str, Sequence[str]] | None = None,
        package_inits: bool = False,
    ) -> ModuleType:
        """Import `module` from the release without running its parent packages' __init__.

        vLLM's and SGLang's package __init__ files import the whole serving stack, so every
        parent of the target is registered as an empty package pointing into the unpacked tree
        (with `package_inits`, only the top one: the others import as usual, since a package
        __init__ run late, for a name asked of it, can meet its submodules half imported);
        the target and whatever it imports then run unmodified. `stubs` maps a module to names
        that the target imports but the tested classes never use: each becomes a `Stub`, set on
        the module if it is already registered (an emptied parent package), else on a stand-in
        module that replaces the real one. A project run as installed (torch) is imported as it
        is, parents included, once its installed version is checked. Any failure is an
        UpstreamError with its cause.
        """
        root = self.release_root(name, version)
        if not _runs_installed(name):
            parts = module.split(".")
            for depth in range(1, len(parts)):
                qualname = ".".join(parts[:depth])
                if qualname not in sys.modules and (depth == 1 or not package_inits):
                    _empty_package(qualname, root.joinpath(*parts[:depth]))
            if len(parts) == 1 and not getattr(sys.modules.get(module), "__file__", None):
                sys.modules.pop(module, None)  # the top package is the target: its own __init__
                sys.path.insert(0, str(root))
        for stub_module, names in (stubs or {}).items():
            holder = sys.modules.get(stub_module) or _stub_module(stub_module)
            for stub_name in names:
                setattr(holder, stub_name, Stub(f"{stub_module}.{stub_name}"))
        try:
            loaded = importlib.import_module(module)
        except Exception as exc:
            raise UpstreamError(
                f"importing {module} from {name}=={version} failed: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            if str(root) in sys.path[:1] and not _runs_installed(name):
                sys.path.remove(str(root))
        if not Path(loaded.__file__ or "").resolve().is_relative_to(root):
            raise UpstreamError(f"{module} was imported from {loaded.__file__}, not from {root}")
        return loaded

    def copy_loaded_files(self, name: str, version: str, dest_cache_dir: Path) -> list[Path]:
        """Copy the release files that this process has imported into another cache directory.

        Run after `load_module`, it makes a bundle with the cache directory's layout (only
        what the target needs, plus the dist-info), so a GPU machine without network runs the
        same reproducer with ERRKB_CACHE_DIR pointing at the bundle. The files are added to
        what the bundle holds of the release already: every reproducer of a release bundled in
        turn leaves the files of each. Returns the copied files; none for a project run as
        installed, which that machine has itself.
        """
        if _runs_installed(name):
            return []
        root = self.unpacked_dir(name, version)
        files = {
            path
            for mod in list(sys.modules.values())
            if (file := getattr(mod, "__file__", None))
            and (path := Path(file).resolve()).is_relative_to(root)
        }
        files.update(path for path in self._dist_info(name, version).rglob("*") if path.is_file())
        target = dest_cache_dir.resolve() / UNPACKED_DIR / _release(name, version)
        for path in sorted(files):
            copy = target / path.relative_to(root)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
        return sorted(target / path.relative_to(root) for path in files)
