"""What errkb knows about one upstream project, in one place.

Matching, harvest, ranking, curation and the settings ask these objects instead of keeping
lists of their own, so adding an upstream means adding one module beside this one (and its
tests) and naming it in `app/upstreams/__init__.py`.
"""

import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version


@dataclass(frozen=True, slots=True)
class EntryPoint:
    """A function its users call, and how they spell it (`LLM(...)`, `vllm serve`)."""

    qualname: str
    """`Class.method`, `Class.__init__` or `function`."""
    label: str
    file: re.Pattern[str]
    """The files that define it, in any release (a module may move)."""


def entry_point(file: str, qualname: str, label: str) -> EntryPoint:
    """An entry point defined in a file whose path ends with `file`."""
    return EntryPoint(qualname, label, re.compile(re.escape(file) + "$"))


@dataclass(frozen=True, slots=True)
class CudaErrorReport:
    """How a project reports a failed CUDA call: the runtime's own text after its words, from
    one file, for every kernel, launch or allocation alike (app/harvest/cuda_errors.py)."""

    file: str
    """Where in the repository the check that raises it lives."""
    prefix: str
    """The words before the runtime's text (`CUDA error: `)."""
    error_class: str
    """The class Python users see, from release `since` on."""
    since: str
    older_class: str
    """The class before `since`."""

    def class_of(self, version: str) -> str:
        """The class a release (`2.13.0`) raises it as; the newest for a ref that is no
        version."""
        try:
            older = Version(version) < Version(self.since)
        except InvalidVersion:
            older = False
        return self.older_class if older else self.error_class


@dataclass(frozen=True, slots=True)
class BundledPackage:
    """A package that a project's releases require at one exact version, built from the
    project's own repository but published apart (SGLang's kernels: `sgl-kernel`, renamed
    `sglang-kernel`). Its Python is harvested with the release that requires it, filed where
    the repository keeps it, and linked at that release's tag: the package's own releases
    have no tag in the repository."""

    distributions: tuple[str, ...]
    """Its names on the package index, the one a release requires among them."""
    package: str
    """Its import package (`sgl_kernel`)."""
    path_prefix: str
    """Where its package folder sits in the repository (`sgl-kernel/python/`)."""


@dataclass(frozen=True, slots=True)
class UpstreamProject:
    """One upstream project: how it is published, where its code sits, how its logs look."""

    package: str
    """The import package and the folder under site-packages (`torch`)."""
    repo: str
    """Its GitHub repository, `owner/name` (`pytorch/pytorch`)."""
    distribution: str
    """Its name on the package index (`torch`, `sglang`)."""
    path_prefix: str = ""
    """Where the package folder sits inside the repository when not at the top (`python/`)."""
    current_release: str | None = None
    """The release `errkb serve` harvests before it is ready, or None to leave it out."""
    older_releases: tuple[str, ...] = ()
    """Releases harvested in the background once the server is ready, newest first."""
    sources_platform: str | None = None
    """The platform whose wheel is fetched for a release's sources when it has no sdist:
    every platform's wheel holds the same Python sources, and the smallest one spares the
    download of compiled code harvest never reads (None: the wheel for this machine)."""
    log_prefix: re.Pattern[str] | None = None
    """The prefix its own log lines carry, which names it in a paste without frames."""
    stream_names: re.Pattern[str] | None = None
    """Process, container or unit names that name it (`EngineCore`, `scheduler`)."""
    version_banner: re.Pattern[str] | None = None
    """A line its logs print with its version, the group `version` (`vLLM API server
    version 0.6.3`); `NAME==VERSION` and a `pip list` row name any project's."""
    bundled: tuple[BundledPackage, ...] = ()
    """Packages its releases require at one exact version whose Python is harvested with
    them (`BundledPackage`)."""
    native_sources: dict[str, str] = field(default_factory=dict)
    """Folders of C++/CUDA sources in a release (its sdist, or the installed wheel's headers)
    -> where they sit in the repository: `csrc` -> `csrc`, torch's `torch/include/c10` ->
    `c10`. Their check macros are harvested as native sites (app/harvest/native.py)."""
    native_libraries: tuple[str, ...] = ()
    """Compiled libraries of an installed release (paths below its site-packages) whose
    message literals are harvested (app/harvest/compiled.py); those absent are passed over."""
    cuda_errors: CudaErrorReport | None = None
    """How it reports a CUDA runtime error code, whose catalogue is harvested from the CUDA
    runtime its Linux wheel requires (app/upstreams/nvidia_packages.py); None: it does not."""
    nccl_check: str | None = None
    """The file whose check reports a failed NCCL call with NCCL's own text for its result
    code; those codes are harvested from the NCCL its Linux wheel requires (None: none)."""
    build_libraries: tuple[str, ...] = ()
    """Compiled libraries (paths inside its wheel) whose message literals are harvested from
    the release's wheel for `build_platform`, whatever is installed here: the build that
    holds messages no other build has (torch's CUDA build: its caching allocator, NCCL,
    cuDNN and the CUDA kernels' checks, which the CPU wheel installed here and the macOS wheel
    older releases are read from lack). Only their read-only data is kept in the cache
    (`Upstream.ensure_build_libraries`); ERRKB_CUDA_BUILD_LIBRARIES=false leaves them out."""
    build_platform: re.Pattern[str] | None = None
    """The platform tag of the wheel `build_libraries` are read from (any of its Python
    tags: each carries the same libraries)."""
    checks: dict[str, str] = field(default_factory=dict)
    """Functions that raise when their condition is false: name -> exception class."""
    native_exceptions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Exception classes its compiled code defines, which no Python source harvested declares:
    class name -> base names, as the release's type stubs declare them."""
    error_responses: tuple[str, ...] = ()
    """Functions that build an HTTP error response from a message instead of raising it
    (`create_error_response(message, err_type="NotFoundError", status_code=404)`): users
    paste the JSON body it answers, so each call with a message is harvested like a raise."""
    keyword_suffixes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Exception classes whose `str()` appends ` (name=value, ...)` for these keyword
    arguments of the raise when given (vLLM's VLLMValidationError: `parameter`, `value`)."""
    settings_sources: tuple[str, ...] = ()
    """Files (below the package folder) that define the settings its users type."""
    flag_sources: tuple[str, ...] = ()
    """Those of `settings_sources` whose classes' fields are command-line flags."""
    flag_classes: re.Pattern[str] | None = None
    """Which classes of `flag_sources` hold flags; None: all of them."""
    flags_from_fields: bool = False
    """Whether every field of those classes is a flag, `--name-with-dashes` unless it names
    its own; otherwise only the fields an `add_argument("--flag", ...)` call declares."""
    env_sources: tuple[str, ...] = ()
    """Those of `settings_sources` that declare environment variables."""
    parameters_are_settings: bool = False
    """Whether the raising function's own parameters are what its users type (a library
    called directly, like `torch.optim.Adam(lr=...)`), rather than internal plumbing."""
    installed: bool = False
    """Whether reproducers run the release installed in this environment (the version the
    `reproducers` extra pins) instead of its sources unpacked from the index: a package whose
    compiled core is not in its Python sources (torch) cannot be imported from those."""

    entry_points: tuple[EntryPoint, ...] = ()
    """The functions its users call to reach code (the callers graph stops there)."""
    public_api_entry_points: bool = False
    """Whether every public function of a public module is an entry point (a library)."""

    plain_values: dict[str, str] = field(default_factory=dict)
    """Python source that builds a plain value for a required parameter of this name, for
    generated reproducers (`params` of torch's optimizers: one tensor to optimise)."""

    def flag_classes_match(self, name: str) -> bool:
        """Whether a class of `flag_sources` holds command-line flags."""
        return self.flag_classes is None or self.flag_classes.fullmatch(name) is not None

    def release(self, version: str) -> str:
        """`NAME==VERSION` of a release of this project."""
        return f"{self.distribution}=={version}"


def releases(project: str, versions: str) -> tuple[str, ...]:
    """`NAME==VERSION` for each version in a space-separated list, in its order."""
    return tuple(f"{project}=={version}" for version in versions.split())
