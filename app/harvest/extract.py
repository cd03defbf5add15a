"""Raise and log sites of an upstream release -> draft records, with what the code checks.

Walks the Python sources of a released package and runs the harvest's steps over them, each in
a module of its own: app/harvest/collect.py reads each module's raise sites and what resolves
them, app/harvest/resolve.py resolves messages built elsewhere over the whole release,
app/harvest/site_records.py turns the sites into draft records (app/harvest/messages.py rebuilds the
messages for all three), then app/harvest/context.py and app/harvest/advice.py add what the
code around each site says. Storage lives in app/harvest/drafts.py; this module only reads
files and returns dataclasses.

Files under `test`, `tests` and `benchmarks` directories are not harvested: errors raised there
are not errors users of the library meet.
"""

from __future__ import annotations

import gc
import os
import struct
import tokenize
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from app import upstreams
from app.harvest.advice import add_explanations
from app.harvest.collect import extract_module
from app.harvest.compiled import library_sites
from app.harvest.context import add_context
from app.harvest.cuda_errors import UNREADABLE_RUNTIME, cuda_error_drafts, runtime_errors
from app.harvest.native import native_files, read_native
from app.harvest.nccl_errors import UNREADABLE_NCCL, nccl_error_class, nccl_error_drafts, read_nccl
from app.harvest.resolve import ReleaseMessages, resolve_sites
from app.harvest.site_records import DraftStamp, file_drafts, library_drafts
from app.harvest.sites import (
    LOG_KINDS,
    Draft,
    HarvestResult,
    ModuleFacts,
    ProgressCallback,
    RaiseSite,
    SkipReason,
)
from app.upstreams import nvidia_packages
from app.upstreams.base import UpstreamProject
from app.upstreams.elf import RODATA_SUFFIX

Entry = TypeVar("Entry")  # one error code of a catalogue
SKIPPED_DIRS = frozenset({"test", "tests", "benchmarks"})
IN_A_HEADER = "library literal of a header's check"  # drafted from the header instead
IN_ANOTHER_LIBRARY = "library literal of an earlier library"  # drafted from that one


@dataclass(frozen=True, slots=True)
class PythonTree:
    """A package folder whose Python is harvested with a release though another
    distribution ships it (app.upstreams.base.BundledPackage): `root/package_dir`, filed at
    `path_prefix` + the path relative to `root` in the release's repository."""

    root: Path
    package_dir: str
    path_prefix: str


def extract_raises(source: str, rel_path: str = "<unknown>") -> list[RaiseSite]:
    """Every raise site of one module, in source order, resolved against the module alone;
    raises SyntaxError if unparsable. Usable on its own (e.g. to see whether a known raise
    moved between releases)."""
    facts = extract_module(source, rel_path)
    return resolve_sites(facts, ReleaseMessages([facts]))


def harvest_tree(
    root: Path,
    *,
    repo: str,
    ref: str,
    analyzed_at: str,
    path_prefix: str = "",
    package_dir: str | None = None,
    progress: ProgressCallback | None = None,
    native_root: Path | None = None,
    build_root: Path | None = None,
    nvidia: Mapping[str, Path] | None = None,
    bundled: Sequence[PythonTree] = (),
) -> HarvestResult:
    """Draft records, with code context, for every raise site under `root/package_dir`,
    and under each `bundled` tree (parsed with them: one release's modules).

    filePath is `path_prefix` + the path relative to `root`, so an unpacked wheel with
    `package_dir="vllm"` gives `vllm/...`, and `path_prefix="python/"` gives SGLang's
    `python/sglang/...`. `ref` (tag or commit) pins githubUrl and is the analyzedSha.
    Modules are parsed once; messages built in another module (a class's `__init__`),
    callers and handlers are resolved over the whole release afterwards.

    The project's C++/CUDA folders under `native_root` (its `native_sources`) add their
    native sites, each filed at the path the repository keeps it at, and its compiled
    libraries there (`native_libraries`) their message literals; so do the read-only data of
    its `build_libraries` the release cache kept under `build_root`
    (`Upstream.ensure_build_libraries`), each filed under its library. What is kept of the
    NVIDIA packages in `nvidia` (app/upstreams/nvidia_packages.py) adds one draft per error
    code, where the project reports them (the CUDA runtime's, NCCL's).
    """
    stamp = DraftStamp(repo, ref, analyzed_at)
    trees = [PythonTree(root, package_dir or "", path_prefix), *bundled]
    paths = [
        (path, tree.path_prefix + path.relative_to(tree.root).as_posix())
        for tree in trees
        for path in _python_files(tree.root / tree.package_dir)
    ]
    result = HarvestResult()
    modules: list[ModuleFacts] = []
    with _cyclic_gc_paused():
        for done, (path, file_path) in enumerate(paths, start=1):
            try:
                modules.append(extract_module(_read_source(path), file_path))
            except (SyntaxError, ValueError, RecursionError):  # ValueError: bad bytes, NUL
                result.skipped[SkipReason.UNPARSABLE_FILE] += 1
            if progress:
                progress(done, len(paths), file_path)
        classes = ReleaseMessages(modules)
        result.bases = classes.bases
        for module in modules:
            sites = resolve_sites(module, classes)
            result.files += 1
            logged = sum(site.kind in LOG_KINDS for site in sites)
            result.raise_sites += len(sites) - logged
            result.log_sites += logged
            drafts = file_drafts(sites, module.source, module.file_path, stamp)
            drafted = {id(draft.site) for draft in drafts}
            result.skipped.update(s.skip for s in sites if s.skip and id(s) not in drafted)
            result.located += sum(draft.located for draft in drafts)
            result.drafts.extend(drafts)
        add_context(result.drafts, modules, classes.bases, stamp.repo, stamp.ref)
        project = upstreams.BY_REPO.get(repo)
        add_explanations(result.drafts, modules, project, stamp.repo, stamp.ref)
    if project is None:
        return result
    first_native = len(result.drafts)
    libraries: list[tuple[Path, str]] = []
    if native_root is not None:
        for folder, repo_folder in project.native_sources.items():
            _harvest_native(result, native_root, folder, repo_folder, stamp)
        libraries += [(native_root / library, library) for library in project.native_libraries]
    if build_root is not None:
        libraries += [
            (build_root / f"{library}{RODATA_SUFFIX}", library)
            for library in project.build_libraries
        ]
    # A header's check is compiled into the libraries too: its record is the header's,
    # which knows the file and line, so the library's copy of its text is left out.
    known = "\0".join(d.record["errorMessage"] for d in result.drafts[first_native:])
    _harvest_libraries(result, libraries, known, stamp)
    _harvest_nvidia(result, nvidia or {}, project, native_root, stamp)
    return result


def _harvest_libraries(
    result: HarvestResult, libraries: list[tuple[Path, str]], known: str, stamp: DraftStamp
) -> None:
    """The message literals of each library present (its file, and the name its drafts file
    it under) as drafts, but those of a header's check (in `known`) and those an earlier
    library of the list gave: the installed build's libc10.so and the CUDA build's share most
    of their messages, and one message is one draft, filed under the first library."""
    drafted: set[str] = set()
    for path, library in libraries:
        if not path.is_file():
            continue
        literals, skipped = library_sites(path)
        kept = [site for site in literals if site.head not in known]
        fresh = [site for site in kept if site.message.template not in drafted]
        drafted.update(site.message.template for site in fresh)
        result.skipped.update(skipped)
        result.skipped[IN_A_HEADER] += len(literals) - len(kept)
        result.skipped[IN_ANOTHER_LIBRARY] += len(kept) - len(fresh)
        result.library_sites += len(fresh)
        result.drafts.extend(library_drafts(fresh, library, stamp))


def _harvest_nvidia(
    result: HarvestResult,
    nvidia: Mapping[str, Path],
    project: UpstreamProject,
    native_root: Path | None,
    stamp: DraftStamp,
) -> None:
    """The error codes of the NVIDIA packages the project reports, as drafts at the file
    that reports them; a package whose files cannot be read is one counted reason."""
    runtime = nvidia.get(nvidia_packages.CUDA_RUNTIME.key)
    report = project.cuda_errors
    if runtime is not None and report is not None:
        error_class = report.class_of(stamp.ref.removeprefix("v"))
        _add_catalogue(
            result,
            UNREADABLE_RUNTIME,
            lambda: runtime_errors(runtime),
            lambda errors: cuda_error_drafts(
                errors, runtime, report.file, report.prefix, error_class, stamp
            ),
        )
    nccl = nvidia.get(nvidia_packages.NCCL.key)
    check = project.nccl_check
    if nccl is not None and check is not None:
        nccl_class = nccl_error_class(_header(native_root, project, check))
        _add_catalogue(
            result,
            UNREADABLE_NCCL,
            lambda: read_nccl(nccl),
            lambda codes: nccl_error_drafts(
                codes, nvidia_packages.package_release(nccl), check, nccl_class, stamp
            ),
        )


def _header(native_root: Path | None, project: UpstreamProject, file_path: str) -> Path | None:
    """Where the release keeps a file of its repository among its native sources."""
    if native_root is None:
        return None
    for folder, repo_folder in project.native_sources.items():
        if file_path.startswith(repo_folder + "/"):
            return native_root / folder / file_path.removeprefix(repo_folder + "/")
    return None


def _add_catalogue(
    result: HarvestResult,
    unreadable: str,
    read: Callable[[], list[Entry]],
    drafts_of: Callable[[list[Entry]], list[Draft]],
) -> None:
    """One NVIDIA package's error catalogue read (`read`) and drafted (`drafts_of`) into
    the result; a package whose files cannot be read is the `unreadable` reason, counted."""
    try:
        entries = read()
    except (OSError, ValueError, struct.error):
        result.skipped[unreadable] += 1
        return
    drafts = drafts_of(entries)
    result.nvidia_errors += len(drafts)
    result.drafts.extend(drafts)


def _harvest_native(
    result: HarvestResult, root: Path, folder: str, repo_folder: str, stamp: DraftStamp
) -> None:
    """The native sites of one C++/CUDA folder as drafts, rendered as Python sites are."""
    base = root / folder
    for path in native_files(base):
        file_path = f"{repo_folder}/{path.relative_to(base).as_posix()}"
        found = read_native(path, file_path)
        result.skipped.update(found.skipped)
        if not found.source:
            continue
        result.native_files += 1
        result.native_sites += len(found.sites)
        drafts = file_drafts(found.sites, found.source, file_path, stamp)
        for draft in drafts:
            site = draft.site
            if site is not None:
                draft.context = {
                    "function": site.function,
                    "guard": site.guard,
                    "macro": site.macro,
                }
        result.drafts.extend(drafts)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Syntax trees hold no cycles, so refcounting frees them; left on, the cycle collector
    rescans the whole heap again and again while they are built (docs/benchmarks.md,
    "Harvest cost")."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _python_files(base: Path) -> list[Path]:
    """The .py files under base, sorted so that runs are reproducible."""
    found: list[Path] = []
    for directory, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and d != "__pycache__")
        found.extend(Path(directory, name) for name in sorted(files) if name.endswith(".py"))
    return found


def _read_source(path: Path) -> str:
    """Decoded as Python does (PEP 263 cookie, universal newlines), so line numbers agree."""
    with tokenize.open(path) as handle:
        return handle.read()
