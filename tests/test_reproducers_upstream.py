"""app.upstreams.release_cache: released wheels downloaded and unpacked once, target modules
loaded alone.

The loader's mechanics are checked on small wheels built here (no network, exact
expectations); the real vLLM and SGLang releases are checked too, through the default
cache directory, so the download happens once per machine.
"""

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from app.config import PROJECT_ROOT
from app.upstreams import environment_install, release_cache, release_errors
from app.upstreams.release_cache import Upstream
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # downloads from the package index

VLLM = ("vllm", "0.33.0")
SGLANG = ("sglang", "0.5.23")
HF3FS_MODULE = "vllm.distributed.kv_transfer.kv_connector.v1.hf3fs.utils.gather_scatter_helper"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A fresh cache directory."""
    return tmp_path / "cache"


@pytest.fixture
def releases(cache: Path) -> Upstream:
    """The releases of that cache, as an entry point hands them down."""
    return Upstream(cache)


def make_wheel(
    cache: Path, name: str, files: dict[str, str], version: str = "1.0", requires: tuple = ()
) -> None:
    """Put a wheel of `files` into the cache, so ensure_unpacked finds it without pip."""
    wheels = cache / release_cache.WHEELS_DIR
    wheels.mkdir(parents=True, exist_ok=True)
    metadata = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        "Home-page: https://example.org/home\n"
        "Project-URL: Documentation, https://docs.example.org\n"
        f"Project-URL: Source, https://github.com/example-org/{name}.git\n"
    ) + "".join(f"Requires-Dist: {line}\n" for line in requires)
    with zipfile.ZipFile(wheels / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(path, textwrap.dedent(text))
        archive.writestr(f"{name}-{version}.dist-info/METADATA", metadata)


def forget(prefix: str) -> None:
    for name in [name for name in sys.modules if name.split(".")[0] == prefix]:
        del sys.modules[name]


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=PROJECT_ROOT,
        env={**os.environ, **env},
        check=False,
    )


def test_unpack_keeps_sources_and_metadata_only(cache: Path, releases: Upstream) -> None:
    make_wheel(
        cache,
        "demo_src",
        {
            "demo_src/__init__.py": "",
            "demo_src/native.so": "binary",
            "demo_src/data.json": "{}",
        },
    )
    root = releases.ensure_unpacked("demo_src", "1.0")
    assert root == cache.resolve() / "unpacked" / "demo_src-1.0"
    kept = sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
    assert kept == ["demo_src-1.0.dist-info/METADATA", "demo_src/__init__.py"]


def test_concurrent_unpacks_share_one_tree(cache: Path) -> None:
    make_wheel(cache, "demo_race", {f"demo_race/m{i}.py": "" for i in range(200)})
    code = (
        "import sys; from pathlib import Path; from app.upstreams.release_cache import Upstream; "
        f"print(Upstream(Path({str(cache)!r})).ensure_unpacked('demo_race', '1.0'))"
    )
    env = dict(os.environ)
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    roots = {run.communicate(timeout=120)[0].strip() for run in runs}
    assert [run.returncode for run in runs] == [0] * 4
    assert roots == {str(cache.resolve() / "unpacked" / "demo_race-1.0")}
    assert [path.name for path in (cache / "unpacked").iterdir()] == ["demo_race-1.0"]
    assert len(list((cache / "unpacked" / "demo_race-1.0" / "demo_race").iterdir())) == 200


def test_project_urls_and_repo_come_from_metadata(cache: Path, releases: Upstream) -> None:
    make_wheel(cache, "demo_meta", {"demo_meta/__init__.py": ""})
    assert releases.project_urls("demo_meta", "1.0") == {
        "Documentation": "https://docs.example.org",
        "Source": "https://github.com/example-org/demo_meta.git",
        "Home-page": "https://example.org/home",
    }
    assert releases.github_repo("demo_meta", "1.0") == "example-org/demo_meta"


def test_load_module_runs_no_parent_init(cache: Path, releases: Upstream) -> None:
    make_wheel(
        cache,
        "demo_pkg",
        {
            "demo_pkg/__init__.py": "raise RuntimeError('the package __init__ ran')",
            "demo_pkg/sub/__init__.py": "raise RuntimeError('the subpackage __init__ ran')",
            "demo_pkg/helpers.py": "VALUE = 42",
            "demo_pkg/sub/target.py": (
                "from demo_pkg.helpers import VALUE\nclass Pool: size = VALUE"
            ),
        },
    )
    try:
        module = releases.load_module("demo_pkg", "1.0", "demo_pkg.sub.target")
        assert module.Pool.size == 42
        assert sys.modules["demo_pkg"].__spec__.submodule_search_locations == [
            str(cache.resolve() / "unpacked" / "demo_pkg-1.0" / "demo_pkg")
        ]
    finally:
        forget("demo_pkg")


def test_a_module_that_imports_a_dunder_of_its_package_runs_its_init(
    cache: Path, releases: Upstream
) -> None:
    """transformers' modules import `__version__` from their package: a dunder its `__init__`
    sets to a literal is read from it (running it would meet `utils` half loaded: its
    imports cycle back); one it does not bind stays refused."""
    make_wheel(
        cache,
        "demo_lazy",
        {
            "demo_lazy/__init__.py": "__version__ = '5.24.0'\nfrom .utils import HELPER\n",
            "demo_lazy/utils/__init__.py": "from .. import __version__\nHELPER = 1\n",
            "demo_lazy/audio.py": "from .utils import __version__ as VERSION\n",
        },
    )
    try:
        module = releases.load_module("demo_lazy", "1.0", "demo_lazy.audio", package_inits=True)
        assert module.VERSION == "5.24.0"
        with pytest.raises(AttributeError):
            sys.modules["demo_lazy"].__wrapped__  # noqa: B018
    finally:
        forget("demo_lazy")


def test_the_top_package_as_target_runs_its_own_init(cache: Path, releases: Upstream) -> None:
    make_wheel(cache, "demo_top", {"demo_top/__init__.py": "def check(): raise ValueError"})
    try:
        module = releases.load_module("demo_top", "1.0", "demo_top", package_inits=True)
        assert callable(module.check)
        assert str(releases.unpacked_dir("demo_top", "1.0")) not in sys.path
    finally:
        forget("demo_top")


def test_a_release_environment_holds_what_its_target_imports_at_load(
    cache: Path, releases: Upstream
) -> None:
    """Computed from the target's imports and the release's Requires-Dist, not listed: the
    requirement it imports is installed from the index, the one it does not is not, and one
    no requirement provides is named as missing; one that serves only an accelerator (NVIDIA's
    cuda-pathfinder, by its name) is named with why and not installed; a later module grows
    it."""
    make_wheel(
        cache,
        "demo_env",
        {
            "demo_env/__init__.py": "",
            "demo_env/target.py": (
                "import six\nimport numpy\nimport nowhere_errkb\nimport cuda.pathfinder\n"
            ),
            "demo_env/later.py": "import tomli_w\n",
        },
        requires=("six>=1.16", "tomli-w", "toolz", "numpy", "cuda-pathfinder"),
    )
    folder = releases.ensure_environment("demo_env", "1.0", ["demo_env.target"])
    held = json.loads((folder / environment_install.ENVIRONMENT_MANIFEST).read_text())
    assert held["specs"] == ["six>=1.16"]
    assert held["missing"] == {"nowhere_errkb": "demo_env.target"}
    assert "CUDA" in held["accelerator_imports"]["cuda"]
    assert not (folder / "cuda").exists()
    assert (folder / "six.py").is_file()
    assert not (folder / "toolz").exists()
    assert not (folder / "numpy").exists()
    releases.ensure_environment("demo_env", "1.0", ["demo_env.later"])
    assert (folder / "six.py").is_file()
    assert (folder / "tomli_w").is_dir()


def test_stubs_stand_in_for_unused_names_and_refuse_use(cache: Path, releases: Upstream) -> None:
    make_wheel(
        cache,
        "demo_stub",
        {
            "demo_stub/__init__.py": "def log(): pass",
            "demo_stub/heavy.py": "raise ImportError('the serving stack is not installed')",
            "demo_stub/target.py": "from demo_stub.heavy import Batch\nfrom demo_stub import log",
        },
    )
    try:
        module = releases.load_module(
            "demo_stub",
            "1.0",
            "demo_stub.target",
            stubs={"demo_stub.heavy": ("Batch",), "demo_stub": ("log",)},
        )
        with pytest.raises(release_errors.StubUsedError, match=r"demo_stub\.heavy\.Batch"):
            module.Batch()
        with pytest.raises(release_errors.StubUsedError, match=r"demo_stub\.log"):
            module.log()
    finally:
        forget("demo_stub")


def test_import_failure_is_an_upstream_error_with_its_cause(
    cache: Path, releases: Upstream
) -> None:
    make_wheel(cache, "demo_broken", {"demo_broken/target.py": "import errkb_not_installed"})
    try:
        with pytest.raises(
            release_errors.UpstreamError, match="No module named 'errkb_not_installed'"
        ):
            releases.load_module("demo_broken", "1.0", "demo_broken.target")
    finally:
        forget("demo_broken")


def test_unknown_release_is_an_error_with_pips_reason(cache: Path, releases: Upstream) -> None:
    with pytest.raises(release_errors.UpstreamError) as caught:
        releases.ensure_unpacked("vllm", "0.0.0.404")
    assert "pip download vllm==0.0.0.404 failed" in str(caught.value)
    assert "No matching distribution found for vllm==0.0.0.404" in str(caught.value)
    assert not (cache / "unpacked" / "vllm-0.0.0.404").exists()


def test_importing_app_upstream_and_reproduce_leaves_torch_out() -> None:
    done = run_python(
        "import sys, app.upstreams.release_cache, app.reproducers.harness;"
        " print('torch' in sys.modules)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_vllm_release_is_unpacked_once_into_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    root = RELEASES.ensure_unpacked(*VLLM)
    assert root == RELEASES.unpacked_dir(*VLLM)
    assert (root / Path(*HF3FS_MODULE.split(".")).with_suffix(".py")).is_file()
    assert not list(root.glob("vllm/*.so"))

    def no_pip(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a cached release must not run pip")

    monkeypatch.setattr(release_cache.subprocess, "run", no_pip)
    assert RELEASES.ensure_unpacked(*VLLM) == root


def test_real_releases_name_their_github_repos() -> None:
    assert RELEASES.project_urls(*VLLM)["Homepage"] == "https://github.com/vllm-project/vllm"
    assert RELEASES.github_repo(*VLLM) == "vllm-project/vllm"
    assert RELEASES.github_repo(*SGLANG) == "sgl-project/sglang"


def test_vllm_target_imports_without_the_serving_stack() -> None:
    code = f"""if True:
        import json, sys
        from app.config import Settings
        from app.upstreams.release_cache import Upstream
        releases = Upstream(Settings().cache_dir)
        module = releases.load_module("vllm", "0.33.0", "{HF3FS_MODULE}")
        print(json.dumps({{"file": module.__file__, "modules": sorted(sys.modules)}}))
    """
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded["file"].startswith(str(RELEASES.unpacked_dir(*VLLM)))
    for heavy in ("vllm.engine", "vllm.entrypoints", "vllm.model_executor", "vllm.v1.engine"):
        assert heavy not in loaded["modules"]
    assert "torch" in loaded["modules"]


def make_sdist(cache: Path, name: str, files: dict[str, str], version: str = "1.0") -> None:
    """Put a source distribution of `files` into the cache, as the index serves one."""
    import io
    import tarfile

    sdists = cache / release_cache.SDISTS_DIR
    sdists.mkdir(parents=True, exist_ok=True)
    files = {
        **files,
        "PKG-INFO": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            f"Project-URL: Source, https://github.com/example-org/{name}\n"
        ),
    }
    with tarfile.open(sdists / f"{name}-{version}.tar.gz", "w:gz") as archive:
        for path, text in files.items():
            data = textwrap.dedent(text).encode()
            member = tarfile.TarInfo(f"{name}-{version}/{path}")
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))


def test_an_sdist_is_unpacked_like_a_wheel(cache: Path, releases: Upstream) -> None:
    """The sdist's package sources and its PKG-INFO as METADATA; its tests,
    benchmarks and build files are left out; it is preferred to a wheel of the release."""
    make_sdist(
        cache,
        "demo_sdist",
        {
            "demo_sdist/__init__.py": "VALUE = 'from the sdist'\n",
            "demo_sdist/kernel.cu": "",
            "tests/test_x.py": "",
            "benchmarks/b.py": "",
            "setup.py": "",
        },
    )
    make_wheel(cache, "demo_sdist", {"demo_sdist/__init__.py": "VALUE = 'from the wheel'\n"})
    root = releases.ensure_unpacked("demo_sdist", "1.0")
    kept = sorted(str(path.relative_to(root)) for path in root.rglob("*") if path.is_file())
    assert kept == ["demo_sdist-1.0.dist-info/METADATA", "demo_sdist/__init__.py", "setup.py"]
    assert "from the sdist" in (root / "demo_sdist" / "__init__.py").read_text()
    assert releases.github_repo("demo_sdist", "1.0") == "example-org/demo_sdist"


def test_a_real_sdist_is_fetched_from_the_index() -> None:
    """vLLM 0.12.0's 18 MB sdist through pip's own session, checked against the index's
    sha256 (cached in the default cache directory, like the wheels)."""
    root = RELEASES.ensure_unpacked("vllm", "0.12.0")
    assert (root / "vllm" / "sampling_params.py").is_file()
    assert RELEASES.github_repo("vllm", "0.12.0") == "vllm-project/vllm"


def test_torch_target_is_the_installed_pinned_release(cache: Path) -> None:
    """torch's compiled core is not in its Python sources: its reproducers import the torch
    the reproducers extra installed, and nothing is downloaded or unpacked for it."""
    code = f"""if True:
        import json
        from pathlib import Path
        from app.upstreams.release_cache import Upstream
        releases = Upstream(Path({str(cache)!r}))
        module = releases.load_module("torch", "2.13.0", "torch.optim.optimizer")
        root = releases.release_root("torch", "2.13.0")
        print(json.dumps({{"file": module.__file__, "root": str(root),
                          "bundled": len(releases.copy_loaded_files("torch", "2.13.0", root))}}))
    """
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    import torch

    site = Path(torch.__file__).resolve().parents[1]
    assert Path(loaded["file"]).resolve() == site / "torch" / "optim" / "optimizer.py"
    assert Path(loaded["root"]) == site
    assert loaded["bundled"] == 0
    assert not cache.exists()


def test_installed_release_other_than_the_pin_is_refused(releases: Upstream) -> None:
    with pytest.raises(release_errors.UpstreamError) as caught:
        releases.load_module("torch", "2.12.0", "torch.optim.optimizer")
    assert "but the reproducer pins 2.12.0" in str(caught.value)
    with pytest.raises(release_errors.UpstreamError) as caught:
        releases.installed_root("errkb-not-installed", "1.0")
    assert "errkb-not-installed==1.0 is not installed" in str(caught.value)
