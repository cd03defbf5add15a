"""The release cache's build libraries (`Upstream.ensure_build_libraries`): a wheel fetched
from a package index on the loopback interface, served as PyPI serves torch's (PEP 691's
JSON, each file's sha256), its libraries' read-only data kept and the wheel deleted; the
wheels of other builds and platforms passed over; a cut wheel or a release without one an
UpstreamError with its reason, and nothing kept."""

import io
import tarfile
from pathlib import Path

import pytest

from app.upstreams.elf import read_only_data, rodata_sections
from app.upstreams.release_cache import LIBRARIES_DIR, SDISTS_DIR, WHEELS_DIR, Upstream
from app.upstreams.release_errors import UpstreamError
from tests.helpers.libraries import build_library, package_index, write_wheel

VERSION = "2.13.0"
CUDA_WHEEL = f"torch-{VERSION}-cp311-cp311-manylinux_2_28_x86_64.whl"
# Wheels that are not the CUDA build's: another build (pip's find-links hold `+cpu` here),
# another platform, the macOS wheel older releases' sources come from. Not zip files:
# taking one would fail.
OTHER_WHEELS = (
    f"torch-{VERSION}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    f"torch-{VERSION}-cp311-cp311-manylinux_2_28_aarch64.whl",
    f"torch-{VERSION}-cp311-none-macosx_14_0_arm64.whl",
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("elf"))


def _others(folder: Path) -> list[Path]:
    folder.mkdir(exist_ok=True)
    for name in OTHER_WHEELS:
        (folder / name).write_bytes(b"not this build")
    return [folder / name for name in OTHER_WHEELS]


def _cuda_wheel(folder: Path, library: Path) -> Path:
    folder.mkdir(exist_ok=True)
    members = {
        "torch/__init__.py": b"",
        "torch/lib/libc10_cuda.so": library.read_bytes(),
        "torch/lib/libtorch_cuda.so": library.read_bytes(),
        "torch/lib/libshm.so": library.read_bytes(),  # not one torch's build libraries name
    }
    return write_wheel(folder / CUDA_WHEEL, members)


def test_the_cuda_wheels_libraries_are_kept_as_read_only_data_and_the_wheel_deleted(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = [*_others(tmp_path / "index"), _cuda_wheel(tmp_path / "index", library)]
    cache = Upstream(tmp_path / "cache")
    with package_index("torch", served) as url:
        monkeypatch.setenv("PIP_INDEX_URL", url)
        root = cache.ensure_build_libraries("torch", VERSION)
    assert root == cache.cache_dir / LIBRARIES_DIR / f"torch-{VERSION}"
    kept = sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())
    assert kept == ["torch/lib/libc10_cuda.so.rodata", "torch/lib/libtorch_cuda.so.rodata"]
    assert read_only_data(root / kept[0]) == rodata_sections(library)
    assert list((cache.cache_dir / LIBRARIES_DIR).iterdir()) == [root]  # no wheel, no half
    monkeypatch.delenv("PIP_INDEX_URL")  # the index is gone: the kept data is used
    assert cache.ensure_build_libraries("torch", VERSION) == root


def test_a_cut_wheel_is_an_error_with_its_reason_and_nothing_is_kept(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _cuda_wheel(tmp_path / "index", library)
    wheel.write_bytes(wheel.read_bytes()[: wheel.stat().st_size // 2])
    cache = Upstream(tmp_path / "cache")
    with package_index("torch", [wheel]) as url:
        monkeypatch.setenv("PIP_INDEX_URL", url)
        with pytest.raises(UpstreamError, match=r"reading the libraries of torch==2\.13\.0"):
            cache.ensure_build_libraries("torch", VERSION)
    assert list((cache.cache_dir / LIBRARIES_DIR).iterdir()) == []


def test_a_release_without_a_cuda_wheel_is_an_error_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Upstream(tmp_path / "cache")
    with package_index("torch", _others(tmp_path / "index")) as url:
        monkeypatch.setenv("PIP_INDEX_URL", url)
        with pytest.raises(UpstreamError, match=r"no manylinux\\w\*_x86_64 wheel of torch=="):
            cache.ensure_build_libraries("torch", VERSION)
    assert list((cache.cache_dir / LIBRARIES_DIR).iterdir()) == []


def test_nothing_is_downloaded_when_turned_off_or_for_a_project_without_them(
    tmp_path: Path,
) -> None:
    """ERRKB_CUDA_BUILD_LIBRARIES=false reaches the cache as `build_libraries=False`; vLLM
    names no build libraries."""
    assert (
        Upstream(tmp_path, build_libraries=False).ensure_build_libraries("torch", VERSION) is None
    )
    assert Upstream(tmp_path).ensure_build_libraries("vllm", "0.33.0") is None
    assert list(tmp_path.iterdir()) == []


def test_an_unpacked_wheel_keeps_its_packages_folders_but_only_python_files(
    tmp_path: Path,
) -> None:
    """A module may check at import that a folder of its package exists (SGLang's
    `sglang.kernels.jit` looks for its `include/` and `csrc/`): the folders stay, empty of
    what is left out; no folder is made at the top, where it would be imported as a package."""
    (tmp_path / WHEELS_DIR).mkdir()
    write_wheel(
        tmp_path / WHEELS_DIR / "demo-1.0-cp311-cp311-manylinux_2_34_x86_64.whl",
        {
            "demo/__init__.py": b"",
            "demo/jit/__init__.py": b"",
            "demo/jit/include/kernel.cuh": b"// a header",
            "demo/jit/csrc/sub/kernel.cu": b"// a kernel",
            "triton/lib/libtriton.so": b"not read",
            "demo-1.0.dist-info/METADATA": b"Name: demo",
            "demo-1.0.data/headers/x.h": b"",
        },
    )
    root = Upstream(tmp_path).ensure_unpacked("demo", "1.0")
    assert (root / "demo" / "jit" / "include").is_dir()
    assert (root / "demo" / "jit" / "csrc" / "sub").is_dir()
    assert not (root / "demo" / "jit" / "include" / "kernel.cuh").exists()
    assert sorted(p.name for p in root.iterdir()) == ["demo", "demo-1.0.dist-info"]


def test_an_unpacked_sdist_keeps_its_packages_folders_but_only_python_files(
    tmp_path: Path,
) -> None:
    (tmp_path / SDISTS_DIR).mkdir()
    members = {
        "demo-1.0/PKG-INFO": b"Name: demo",
        "demo-1.0/demo/__init__.py": b"",
        "demo-1.0/demo/jit/include/kernel.cuh": b"// a header",
        "demo-1.0/csrc/ops/kernel.cu": b"// outside the package",
    }
    with tarfile.open(tmp_path / SDISTS_DIR / "demo-1.0.tar.gz", "w:gz") as sdist:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            sdist.addfile(info, io.BytesIO(data))
    root = Upstream(tmp_path).ensure_unpacked("demo", "1.0")
    assert (root / "demo" / "jit" / "include").is_dir()
    assert not (root / "demo" / "jit" / "include" / "kernel.cuh").exists()
    assert sorted(p.name for p in root.iterdir()) == ["demo", "demo-1.0.dist-info"]
