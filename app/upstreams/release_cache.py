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

import fcntl
import importlib
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from app import upstreams
from app.upstreams import nvidia_packages
from app.upstreams.distribution_metadata import github_repo_of, installed_version, metadata_urls
from app.upstreams.environment_install import ENVIRONMENT_MANIFEST, _install_environment, _manifest
from app.upstreams.module_loader import Stub, _empty_package, _stub_module
from app.upstreams.package_index import (
    PIP_TIMEOUT_S,
    _fetch,
    _find_sdist,
    _find_wheel,
    _index_files,
    _platform_options,
    _platform_wheel,
    _quiet_pip,
    _release,
    _sdist_name,
)
from app.upstreams.release_errors import UpstreamError
from app.upstreams.unpacking import (
    _keep_read_only_data,
    _unpack_native,
    _unpack_sdist,
    _wanted,
    package_folder,
)

if TYPE_CHECKING:
    from app.upstreams.imports import Needs


WHEELS_DIR = "wheels"
SDISTS_DIR = "sdists"
UNPACKED_DIR = "unpacked"
NATIVE_DIR = "native"  # a release's C++/CUDA sources, unpacked apart from its Python
NVIDIA_DIR = "nvidia"  # what is kept of the NVIDIA packages a release requires
LIBRARIES_DIR = "libraries"  # the read-only data of a release's build libraries
ENVS_DIR = "envs"  # what a release's modules import at load, installed for its reproducers
REQUIREMENTS_DIR = "requirements"  # wheels of requirements, read for the names they ship
LOCKS_DIR = "locks"


def _runs_installed(name: str) -> bool:
    """Whether reproducers run this package as installed rather than unpacked."""
    project = upstreams.BY_PACKAGE.get(name)
    return project is not None and project.installed


class Upstream:
    """The releases cached under one folder (settings.cache_dir), handed down from the entry
     points (create_app, the CLI, a reproducer script) instead of read from the settings here
    ."""

    def __init__(self, cache_dir: Path, *, build_libraries: bool = True) -> None:
        self.cache_dir = cache_dir.expanduser().resolve()
        self.build_libraries = build_libraries
        """Whether `ensure_build_libraries` and `ensure_nvidia` download
        (ERRKB_CUDA_BUILD_LIBRARIES)."""

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
                files = _index_files(session, name)
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
                        members = wheel.namelist()
                        packages = {m.split("/")[0] for m in members if m.endswith(".py")}
                        for member in members:
                            if _wanted(member):
                                wheel.extract(member, tmp)
                            elif (folder := package_folder(member, packages)) is not None:
                                (tmp / folder).mkdir(parents=True, exist_ok=True)
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

    def ensure_nvidia(
        self, name: str, version: str, package: nvidia_packages.NvidiaPackage
    ) -> Path | None:
        """A folder holding what harvest reads of the NVIDIA package (the CUDA runtime,
        NCCL) the release's Linux wheel requires (app/upstreams/nvidia_packages.py), fetched
        once under the release's lock; None when this cache downloads no part of the CUDA
        build (ERRKB_CUDA_BUILD_LIBRARIES=false); an UpstreamError says why there is none."""
        if not self.build_libraries:
            return None
        target = self.cache_dir / NVIDIA_DIR / package.key / _release(name, version)
        with self._locked(name, version):
            return nvidia_packages.ensure_package(target, version, package)

    def ensure_build_libraries(self, name: str, version: str) -> Path | None:
        """Root of the read-only data of the release's `build_libraries` (its project's,
        app/upstreams/base.py), each at `PATH.rodata` below it; None when the project names
        none or this cache downloads none (ERRKB_CUDA_BUILD_LIBRARIES=false).

        The wheel for the project's `build_platform` (torch's Linux CUDA build, 0.5-0.9 GB)
        is fetched with pip's network session from the index's JSON API, its sha256 checked,
        into a temporary folder beside the target; each library is streamed out of it in
        turn and only its `.rodata` sections kept (30 MB of torch's 1.5 GB of libraries);
        the wheel is deleted and the folder renamed when complete, under the release's lock,
        so concurrent runs never see half of it. A library the wheel lacks (an older release
        without it) is left out. A download or a wheel that cannot be read is an
        UpstreamError with its reason, and nothing is kept.
        """
        project = upstreams.BY_PACKAGE.get(name)
        if project is None or project.build_platform is None or not project.build_libraries:
            return None
        if not self.build_libraries:
            return None
        target = self.cache_dir / LIBRARIES_DIR / _release(name, version)
        if target.is_dir():
            return target
        with self._locked(name, version):
            if target.is_dir():
                return target
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
            try:
                wheel = self._download_platform_wheel(name, version, project.build_platform, tmp)
                _keep_read_only_data(wheel, project.build_libraries, tmp)
                wheel.unlink()
                tmp.rename(target)
            except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
                raise UpstreamError(
                    f"reading the libraries of {name}=={version}'s wheel failed: {exc}"
                ) from exc
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return target

    def _download_platform_wheel(
        self, name: str, version: str, platform: re.Pattern[str], into: Path
    ) -> Path:
        """The release's wheel for a platform tag `platform` matches, fetched into `into` (the
        way `_download_sdist` fetches an sdist: `pip download` would take a wheel of
        another build that pip's find-links hold, such as torch's `+cpu`)."""
        with _quiet_pip():
            from pip._internal.network.session import PipSession

        try:
            with _quiet_pip(), PipSession() as session:
                entry = _platform_wheel(_index_files(session, name), name, version, platform)
                if entry is None:
                    raise UpstreamError(
                        f"the index has no {platform.pattern} wheel of {name}=={version}"
                    )
                return _fetch(session, entry, into / entry["filename"])
        except (OSError, ValueError) as exc:  # requests' errors are OSErrors; bad JSON ValueError
            raise UpstreamError(
                f"fetching the {platform.pattern} wheel of {name}=={version} failed: {exc}"
            ) from exc

    def environment_dir(self, name: str, version: str) -> Path:
        """Where `ensure_environment` installs a release's requirements."""
        return self.cache_dir / ENVS_DIR / _release(name, version)

    def environment_needs(self, name: str, version: str, modules: Iterable[str]) -> "Needs":
        """What these modules of the release import at load beyond this interpreter, as the
        release's requirement specs (app.upstreams.imports), and the names none provides."""
        from app.upstreams import imports

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
        as it is. Reproducer scripts put it last on their path (`harness.load_target`)."""
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
