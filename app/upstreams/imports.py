"""What a module of a release needs installed to load, found from the code, not listed.

Loading a target module runs its module-level imports, and those of every module of its
release they reach (and of the packages between, whose `__init__` runs). Their AST says
which other top-level names get imported: `load_imports`. Each name is then mapped to the
release's own requirements (its metadata's Requires-Dist, at the versions it asks for):
by name (`msgspec`), else by the files of a requirement's wheel from the index whose name
holds the import's (`pyzmq` ships `zmq`), else by what those requirements require in turn
(torch 2.14.1 requires `triton` on Linux): `requirement_specs`. A name this interpreter
already imports (torch, numpy) needs nothing; one no requirement provides is named as
missing, so a module that then fails to import says why. A requirement that serves only an
accelerator (`accelerator_only`: CUDA kernels, NVIDIA's libraries) is left out of this CPU
environment, as the imports under an accelerator's branch are: its import is named with it.
"""

import ast
import functools
import importlib.util
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import parse_wheel_filename

PIP_TIMEOUT_S = 600
# A branch taken only on an accelerator (`if _is_cuda:`, `if is_hip():`): not on this CPU, so
# its imports (SGLang's sgl_kernel, flashinfer, deep_gemm) are not needed to load.
_ACCELERATOR = re.compile(r"cuda|hip|npu|xpu|rocm|musa|hpu|gpu", re.IGNORECASE)
# Distributions that serve only an accelerator: their kernels and libraries run on none of a
# CPU's, and their wheels are hundreds of MB (sglang-kernel's 355, nvidia-cutlass-dsl's libs
# 87 for each CUDA), which a CPU environment would download for nothing. The metadata says so
# by a classifier (`Environment :: GPU :: NVIDIA CUDA`: sglang-kernel, sgl-deep-gemm,
# nvidia-cutlass-dsl, cuda-python) or by the name of NVIDIA's, AMD's and NCCL's CUDA/ROCm
# packages; these say it nowhere in their metadata, so they are named here, each with why.
# triton is not one: its wheel imports on CPU, and SGLang's utils.common imports it at load.
GPU_CLASSIFIER = "Environment :: GPU"
ACCELERATOR_PREFIXES = ("nvidia-", "cuda-", "nccl", "rocm-", "amd-")
ACCELERATOR_ONLY = {
    "flashinfer-python": "attention and GEMM kernels compiled for CUDA",
    "flash-attn": "attention kernels for CUDA and ROCm",
    "xformers": "attention kernels built for CUDA",
    # The index's Linux wheels of these link CUDA's libraries (torchaudio libc10_cuda.so,
    # torchcodec libnvrtc.so): they fail to load beside a CPU build of torch, and with them
    # installed transformers imports them and fails.
    "torchaudio": "the index's Linux wheel is built against torch's CUDA libraries",
    "torchcodec": "the index's Linux wheel links CUDA's runtime compiler (libnvrtc)",
}


def _normal(name: str) -> str:
    """PEP 503's normal form, with `_` and `.` as `-`: `openai_harmony` -> `openai-harmony`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _module_file(root: Path, qualname: str) -> Path | None:
    """The file of a release module: `a/b.py`, or the package's `a/b/__init__.py`."""
    base = root.joinpath(*qualname.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _absolute(node: ast.ImportFrom, current: str, is_package: bool) -> str:
    """The module a `from ... import` reads, relative levels resolved against `current`."""
    if not node.level:
        return node.module or ""
    parts = current.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _loaded_statements(body: Iterable[ast.stmt]) -> Iterable[ast.Import | ast.ImportFrom]:
    """The import statements a module needs when it loads: at its top level, in `if` and
    `with` blocks, class bodies and the fallbacks of a `try`; not in functions, nor under an
    `if TYPE_CHECKING:` without `else` or a test that asks for an accelerator, nor in the
    body of a `try` (optional: the module loads without)."""
    for statement in body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            yield statement
        elif isinstance(statement, ast.If):
            # Under TYPE_CHECKING only for a type checker, unless the `else` binds the names
            # at run time (vLLM's `LazyLoader("llguidance", ...)`, loaded on first use).
            test = ast.unparse(statement.test)
            checking = "TYPE_CHECKING" in test and not statement.orelse
            if not checking and not _ACCELERATOR.search(test):
                yield from _loaded_statements(statement.body)
            yield from _loaded_statements(statement.orelse)
        elif isinstance(statement, ast.Try):
            for block in (statement.orelse, statement.finalbody):
                yield from _loaded_statements(block)
            for handler in statement.handlers:
                yield from _loaded_statements(handler.body)
        elif isinstance(statement, ast.With | ast.ClassDef):
            yield from _loaded_statements(statement.body)


def load_imports(root: Path, module: str, top_init: bool = False) -> dict[str, str]:
    """The top-level names outside the release (and the standard library) that loading
    `module` from the unpacked release at `root` imports, each with the release module that
    imports it first. The packages between the top one and the module run their `__init__`
    (the top one's only with `top_init`, or when a name that is no module is imported from
    it)."""
    top = module.split(".")[0]
    found: dict[str, str] = {}
    seen: set[str] = set()
    parts = module.split(".")
    wanted = [".".join(parts[:depth]) for depth in range(1 if top_init else 2, len(parts))]
    wanted.append(module)
    while wanted:
        current = wanted.pop()
        path = _module_file(root, current)
        if current in seen or path is None:
            continue
        seen.add(current)
        is_package = path.name == "__init__.py"
        for statement in _statements(path):
            if isinstance(statement, ast.Import):
                names = [alias.name for alias in statement.names]
                targets = names
            else:
                source = _absolute(statement, current, is_package)
                names = [source]
                targets = [source, *(f"{source}.{alias.name}" for alias in statement.names)]
                if source == top and any(
                    _module_file(root, f"{top}.{alias.name}") is None for alias in statement.names
                ):
                    targets.append(top)  # a name of the top package's own: its __init__ runs
            for name in names:
                first = name.split(".")[0]
                if first == top or not first or first in sys.stdlib_module_names:
                    continue
                if first != "__future__":
                    found.setdefault(first, current)
            for target in targets:
                if target.split(".")[0] != top:
                    continue
                pieces = target.split(".")
                wanted.extend(".".join(pieces[:depth]) for depth in range(2, len(pieces) + 1))
                if target == top:
                    wanted.append(top)
    return found


@functools.lru_cache(maxsize=4096)
def _statements(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """A file's imports at load, parsed once for every module whose closure reaches it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    return tuple(_loaded_statements(tree.body))


def accelerator_only(metadata: Mapping[str, Any]) -> str | None:
    """Why a distribution serves only an accelerator, from its core metadata as pip's report
    gives it (`name`, `classifier`, `requires_dist`): by its name, its classifier, or a
    requirement of it (on this platform) that serves only one by name (quack-kernels requires
    nvidia-cutlass-dsl); None when it may serve a CPU, or nothing is known of it. torch from
    the index requires CUDA's libraries on Linux: it is never asked, being installed here."""
    name = _normal(str(metadata.get("name", "")))
    if why := _accelerator_by_name(name):
        return why
    gpu = [c for c in metadata.get("classifier", []) if str(c).startswith(GPU_CLASSIFIER)]
    if gpu:
        return f"its metadata says {gpu[0]}"
    for required in base_requirements(metadata.get("requires_dist", [])):
        if why := _accelerator_by_name(required):
            return f"it requires {required}: {why}"
    return None


def _accelerator_by_name(name: str) -> str | None:
    """Why a distribution of this normal name serves only an accelerator, by the name alone."""
    if name in ACCELERATOR_ONLY:
        return ACCELERATOR_ONLY[name]
    if name.startswith(ACCELERATOR_PREFIXES):
        return "a CUDA/ROCm library or binding, by its name"
    return None


@dataclass(slots=True)
class Needs:
    """What some modules of a release need installed: requirement specs of the release (or
    of its requirements), the import names nothing provides, each with a module that imports
    it, and those that only an accelerator-only requirement provides (`accelerator_only`),
    each with that requirement and why it is left out."""

    specs: set[str] = field(default_factory=set)
    missing: dict[str, str] = field(default_factory=dict)
    accelerator: dict[str, str] = field(default_factory=dict)


def _importable_here(name: str) -> bool:
    """Whether this interpreter imports `name` already (torch, numpy, errkb's own)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def base_requirements(lines: Iterable[str]) -> dict[str, str]:
    """Requires-Dist lines that apply here without extras, by normal name -> the spec."""
    found = {}
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            requirement.marker = None
            found[_normal(requirement.name)] = str(requirement)
    return found


def requirement_specs(
    imports: Mapping[str, str],
    requirements: Mapping[str, str],
    top_levels: "TopLevels",
) -> Needs:
    """The release's requirements (`requirements`: normal name -> spec) that provide these
    imported names (name -> the module importing it), and the names none provides. A
    requirement that serves only an accelerator is left out, its import named with it; its
    wheel is never downloaded to read what it ships."""
    needs = Needs()
    left = {name: where for name, where in imports.items() if not _importable_here(name)}
    provided = {name for name in imports if name not in left}
    direct = {name: requirements[_normal(name)] for name in left if _normal(name) in requirements}
    shipping = {
        spec
        for name in left
        if name not in direct
        for dist, spec in requirements.items()
        if _may_ship(name, dist)
    }
    asked = [requirements[_normal(n)] for n in provided if _normal(n) in requirements]
    gpu = top_levels.accelerator_only(sorted({*direct.values(), *shipping, *asked}))

    def take(name: str, spec: str) -> None:
        if spec in gpu:
            needs.accelerator[name] = f"{spec} ({gpu[spec]})"
        else:
            needs.specs.add(spec)
        del left[name]

    for name, spec in direct.items():
        take(name, spec)
    for name in list(left):
        for dist, spec in requirements.items():
            if _may_ship(name, dist) and spec not in gpu and name in top_levels.of(spec):
                take(name, spec)
                break
    if left:
        deeper = base_requirements(top_levels.requires(sorted({*needs.specs, *asked})))
        found = {name: deeper[_normal(name)] for name in left if _normal(name) in deeper}
        gpu.update(top_levels.accelerator_only(sorted(set(found.values()))))
        for name, spec in found.items():
            take(name, spec)
    for name in list(left):  # `flashinfer`: an accelerator-only wheel, not read, named for it
        whole = _normal(name).replace("-", "")
        named = [spec for dist, spec in requirements.items() if whole in dist.replace("-", "")]
        if named and named[0] in gpu:
            needs.accelerator[name] = f"{named[0]}, by its name ({gpu[named[0]]})"
            del left[name]
    needs.missing = left
    return needs


def _may_ship(name: str, dist: str) -> bool:
    """Whether a distribution's name suggests it ships the import `name` (`pyzmq`: `zmq`,
    `oss-harmony`: `openai_harmony`); its wheel's files decide."""
    words = [word for word in _normal(name).split("-") if len(word) >= 4]
    return _normal(name).replace("-", "") in dist.replace("-", "") or any(
        word in dist for word in words
    )


class TopLevels:
    """What the index says of requirements: the top-level names a wheel ships (its files,
    the wheel downloaded once into `folder` with pip, no dependencies) and what a release
    requires (its metadata, through pip's resolver report, no wheel downloaded)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._names: dict[str, set[str]] = {}

    def of(self, spec: str) -> set[str]:
        """The top-level import names of the wheel pip picks for `spec` (empty if none)."""
        if spec not in self._names:
            self._names[spec] = self._read(spec)
        return self._names[spec]

    def _read(self, spec: str) -> set[str]:
        wheel = self._wheel(spec)
        if wheel is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            _pip(["download", "--no-deps", "--only-binary=:all:", "-d", str(self.folder), spec])
            wheel = self._wheel(spec)
        names: set[str] = set()
        if wheel is None:
            return names
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                first = member.split("/")[0]
                if not first.endswith((".dist-info", ".data")):
                    names.add(first.removesuffix(".py").split(".")[0])
        return names

    def _wheel(self, spec: str) -> Path | None:
        """A wheel downloaded before that satisfies `spec`."""
        wanted = Requirement(spec)
        for wheel in sorted(self.folder.glob("*.whl"), reverse=True):
            name, version, _build, _tags = parse_wheel_filename(wheel.name)
            if _normal(name) == _normal(wanted.name) and wanted.specifier.contains(
                version, prereleases=True
            ):
                return wheel
        return None

    def requires(self, specs: list[str]) -> list[str]:
        """The Requires-Dist lines of the releases pip picks for these specs (each alone)."""
        known = self.metadata(specs)
        return [line for spec in specs for line in known[spec].get("requires_dist", [])]

    def accelerator_only(self, specs: list[str]) -> dict[str, str]:
        """Those of these specs whose release serves only an accelerator, each with why."""
        known = self.metadata(specs)
        found = {
            spec: accelerator_only(known[spec] or {"name": Requirement(spec).name})
            for spec in specs
        }
        return {spec: why for spec, why in found.items() if why}

    def metadata(self, specs: list[str]) -> dict[str, dict[str, Any]]:
        """The core metadata (name, Requires-Dist, classifiers) of the release pip picks for
        each spec, from the index (one look for those not asked before, else each alone),
        kept in `metadata.json`; empty for a spec pip finds no wheel of."""
        cache = self.folder / "metadata.json"
        try:
            known: dict[str, dict[str, Any]] = json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        unknown = [spec for spec in specs if spec not in known]
        found = {
            _normal(item.get("metadata", {}).get("name", "")): item
            for item in (resolve(unknown, deps=False) if unknown else [])
        }
        for spec in unknown:
            name = _normal(Requirement(spec).name)
            items = [found[name]] if name in found else resolve([spec], deps=False)
            metadata = items[0].get("metadata", {}) if items else {}
            known[spec] = {key: metadata[key] for key in _METADATA_KEPT if key in metadata}
        if unknown:
            self.folder.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
        return {spec: known[spec] for spec in specs}


_METADATA_KEPT = ("name", "requires_dist", "classifier")


def resolve(specs: list[str], deps: bool = True, constraints: Path | None = None) -> list[dict]:
    """What pip would install for these specs, ignoring what is installed (its report's
    "install" items: name, version, metadata), from the index's metadata, no wheel
    downloaded; empty when they cannot be resolved together."""
    options = ["install", "--dry-run", "--ignore-installed", "--only-binary=:all:", "--quiet"]
    options += [] if deps else ["--no-deps"]
    options += ["-c", str(constraints)] if constraints else []
    code, out = _pip([*options, "--report", "-", *specs])
    if code != 0:
        return []
    try:
        return list(json.loads(out).get("install", []))
    except ValueError:
        return []


def _pip(arguments: list[str]) -> tuple[int, str]:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", *arguments]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return 1, str(error)
    return done.returncode, done.stdout
