"""Native sites: the check macros of C++/CUDA sources as records, through the same drafts,
locations and history as Python raise sites."""

import io
import re
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from sqlmodel import Session

from app.harvest import drafts, harvest_tree
from app.harvest.native import native_sites, read_native
from app.harvest.sites import SkipReason
from app.records import locations
from app.records import service as records
from app.records.filters import RecordFilters
from app.upstreams.release_cache import Upstream
from app.upstreams.release_errors import UpstreamError
from app.upstreams.unpacking import _unpack_native

VLLM = "vllm-project/vllm"
# Lines of vLLM 0.33.0's csrc, as the release has them.
CHECK_CUDA = '#define CHECK_CUDA(x) TORCH_CHECK(x.is_cuda(), #x " must be a CUDA tensor")'
DIVISIBLE = (
    'TORCH_CHECK(size_n % MARLIN_NAMESPACE_NAME::tile_size == 0, "size_n = ", size_n,\n'
    '            " is not divisible by tile_size = ", MARLIN_NAMESPACE_NAME::tile_size);'
)
DEVICE_COUNT = (
    'STD_TORCH_CHECK(false, "cudaGetDeviceCount failed: " +\n'
    "                           std::string(cudaGetErrorString(err)));"
)


def _templates(source: str) -> list[tuple[int, str | None, str | None, str]]:
    sites, _ = native_sites(source)
    return [
        (site.line, site.function, site.error_class, site.message.template)
        for site in sites
        if site.message
    ]


def test_a_check_is_its_literals_with_the_values_between() -> None:
    source = f"void repack(int size_n) {{\n  {DIVISIBLE}\n}}\n"
    assert _templates(source) == [
        (
            2,
            "repack",
            "RuntimeError",
            "size_n = {size_n} is not divisible by tile_size = {MARLIN_NAMESPACE_NAME_tile_size}",
        )
    ]
    [site] = native_sites(source)[0]
    assert site.guard == "size_n % MARLIN_NAMESPACE_NAME::tile_size == 0"
    assert site.macro == "TORCH_CHECK"
    assert site.message is not None
    assert site.message.pattern.startswith(r"size_n = (?P<size_n>")


def test_each_macro_names_the_class_python_sees() -> None:
    source = (
        'int f(int i) {\n  TORCH_CHECK_VALUE(i > 0, "expected a positive size, got ", i);\n'
        '  TORCH_CHECK_INDEX(i < 8, "index ", i, " is out of bounds");\n'
        '  TORCH_CHECK_TYPE(false, "expected a float tensor");\n'
        '  TORCH_CHECK_NOT_IMPLEMENTED(false, "not implemented for sparse");\n'
        '  C10_THROW_ERROR(ValueError, "Unrecognized key \'", key,\n'
        '                  "\' in CUDA allocator config");\n'
        '  AT_ERROR("No available kernel. Aborting execution.");\n'
        '  TORCH_WARN("this overload is deprecated");\n}\n'
    )
    found = [(cls, template) for _, _, cls, template in _templates(source)]
    assert found == [
        ("ValueError", "expected a positive size, got {i}"),
        ("IndexError", "index {i} is out of bounds"),
        ("TypeError", "expected a float tensor"),
        ("NotImplementedError", "not implemented for sparse"),
        ("ValueError", "Unrecognized key '{key}' in CUDA allocator config"),
        ("RuntimeError", "No available kernel. Aborting execution."),
        ("UserWarning", "this overload is deprecated"),
    ]


def test_the_text_c10_adds_is_part_of_the_template() -> None:
    source = (
        "void g(const at::Tensor& self) {\n"
        "  TORCH_CHECK(self.dim() == 2);\n"
        '  TORCH_INTERNAL_ASSERT(self.defined(), "undefined tensor");\n}\n'
    )
    assert [template for *_, template in _templates(source)] == [
        "Expected self.dim() == 2 to be true, but got false.  (Could this error message be "
        "improved?  If so, please report an enhancement request to PyTorch.)",
        'self.defined() INTERNAL ASSERT FAILED at "{file}":{line}, please report a bug to '
        "PyTorch. undefined tensor",
    ]


def test_a_stable_abi_check_names_its_place_before_the_message() -> None:
    source = f"inline void do_init_device_vectors() {{\n  {DEVICE_COUNT}\n}}\n"
    assert _templates(source) == [
        (
            2,
            "do_init_device_vectors",
            "RuntimeError",
            "{function}, {file}:{line}, cudaGetDeviceCount failed: "
            "{std_string_cudaGetErrorString_er}",
        )
    ]


def test_a_macro_body_keeps_its_stringized_argument_and_definitions_are_not_sites() -> None:
    source = (
        "#define TORCH_CHECK(cond, ...) if (!(cond)) fail(__VA_ARGS__)\n"
        f"{CHECK_CUDA}\n"
        '// TORCH_CHECK(false, "a comment is not a site")\n'
        '/* TORCH_CHECK(false, "nor is a block comment") */\n'
        'const char* s = "TORCH_CHECK(false, \\"nor a string\\")";\n'
        "#ifdef TORCH_CHECK\n#endif\n"
    )
    assert _templates(source) == [(2, None, "RuntimeError", "{x} must be a CUDA tensor")]


def test_bad_input_is_skipped_with_its_reason(tmp_path: Path) -> None:
    sites, skipped = native_sites('void f() { TORCH_CHECK(x, "never closed"\n')
    assert sites == []
    assert skipped[SkipReason.UNPARSABLE_FILE] == 1
    sites, skipped = native_sites("void f() { TORCH_CHECK(ok, message); }\n")
    assert sites == []
    assert skipped[SkipReason.NO_LITERAL_TEXT] == 1
    binary = tmp_path / "blob.h"
    binary.write_bytes(b"TORCH_CHECK\0\xff\xfe")
    assert read_native(binary, "csrc/blob.h").skipped[SkipReason.UNPARSABLE_FILE] == 1


def _vllm_release(root: Path, kernel: str, ref: str) -> drafts.Release:
    (root / "vllm").mkdir(parents=True, exist_ok=True)
    (root / "vllm" / "ops.py").write_text('def f():\n    raise ValueError("bad block size")\n')
    (root / "csrc").mkdir(exist_ok=True)
    (root / "csrc" / "ops.cu").write_text(kernel)
    return drafts.resolve_release(str(root), repo=VLLM, ref=ref)


def _native(session: Session) -> dict[str, records.StoredRecord]:
    page = records.list_records(session, RecordFilters(repo=VLLM), 200)
    return {i.record.error_message: i for i in page.items if i.record.file_path == "csrc/ops.cu"}


def test_a_native_site_is_one_record_with_its_locations_per_release(
    session: Session, tmp_path: Path
) -> None:
    first = (
        "void check(torch::Tensor& x) {\n"
        f"{CHECK_CUDA}\n"
        '  TORCH_CHECK(x.size(0) == 4, "expected 4 rows, got ", x.size(0));\n'
        '  TORCH_CHECK(x.dim() == 2, "only 2-D inputs are supported");\n}\n'
    )
    release = _vllm_release(tmp_path / "v1", first, "v1")
    result, counts = drafts.harvest_release(session, release)
    assert (result.native_files, result.native_sites) == (1, 3)
    stored = _native(session)
    rows = stored["expected 4 rows, got {x_size_0}"]
    record = rows.record
    assert (record.line_number, record.error_class) == (3, "RuntimeError")
    assert record.github_url is not None
    assert record.github_url.startswith(f"https://github.com/{VLLM}/blob/v1/csrc/ops.cu#L")
    assert rows.review_state == "draft"

    second = "\n\nvoid check(torch::Tensor& x) {\n" + "\n".join(first.split("\n")[1:3]) + "\n}\n"
    release2 = _vllm_release(tmp_path / "v2", second, "v2")
    _, counts = drafts.harvest_release(session, release2)
    assert counts.gone == 1
    after = _native(session)
    moved = after["expected 4 rows, got {x_size_0}"]
    assert moved.id == rows.id
    assert moved.record.line_number == 5
    located = locations.record_locations(session, [moved.id])[moved.id]
    assert [(loc.release, loc.line_number, loc.function) for loc in located] == [
        (f"{VLLM}@v1", 3, "check"),
        (f"{VLLM}@v2", 5, "check"),
    ]
    assert located[-1].context == {
        "function": "check",
        "guard": "x.size(0) == 4",
        "macro": "TORCH_CHECK",
    }
    assert after["only 2-D inputs are supported"].gone_in == release2.spec


def test_python_sites_keep_their_ids_beside_native_ones(tmp_path: Path) -> None:
    release = _vllm_release(tmp_path / "src", f"{CHECK_CUDA}\n", "v1")
    common = {"repo": VLLM, "ref": "v1", "analyzed_at": "x"}
    alone = harvest_tree(release.root, **common)
    both = harvest_tree(release.root, **common, native_root=release.root)
    python_ids = [d.record["id"] for d in alone.drafts]
    assert python_ids == [d.record["id"] for d in both.drafts][: len(python_ids)]
    assert [d.record["filePath"] for d in both.drafts[len(python_ids) :]] == ["csrc/ops.cu"]


def _tar(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_native_sources_are_unpacked_from_the_sdist_or_the_wheel(tmp_path: Path) -> None:
    sdist = _tar(
        tmp_path / "x.tar.gz",
        {
            "vllm-1.0/csrc/ops.cu": b"cu",
            "vllm-1.0/csrc/notes.md": b"md",
            "vllm-1.0/vllm/ops.py": b"py",
            "vllm-1.0/csrc/../../evil.h": b"no",
        },
    )
    _unpack_native(sdist, ("csrc/",), tmp_path / "out")
    found = sorted(p.relative_to(tmp_path / "out").as_posix() for p in tmp_path.rglob("out/**/*"))
    assert found == ["csrc", "csrc/ops.cu"]
    assert not (tmp_path / "evil.h").exists()
    wheel = tmp_path / "torch-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/include/c10/util/Exception.h", "h")
        archive.writestr("torch/__init__.py", "py")
    _unpack_native(wheel, ("torch/include/c10/",), tmp_path / "whl")
    assert (tmp_path / "whl/torch/include/c10/util/Exception.h").read_text() == "h"
    assert not (tmp_path / "whl/torch/__init__.py").exists()


def test_a_broken_archive_is_an_upstream_error(tmp_path: Path) -> None:
    cache = Upstream(tmp_path)
    (tmp_path / "sdists").mkdir()
    (tmp_path / "sdists" / "vllm-1.0.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(UpstreamError, match="unpacking"):
        cache.ensure_native("vllm", "1.0", ("csrc",))


@pytest.mark.network
def test_vllm_csrc_checks_are_harvested_per_release() -> None:
    from tests.helpers.releases import RELEASES

    release = drafts.resolve_release("vllm==0.33.0", releases=RELEASES)
    extracted = drafts.extract_release(release)
    native = [d.record for d in extracted.result.drafts if d.record["filePath"].startswith("csrc/")]
    assert len(native) > 1500
    by_message = {record["errorMessage"]: record for record in native}
    record = by_message[
        "{function}, {file}:{line}, cudaGetDeviceCount failed: {std_string_cudaGetErrorString_er}"
    ]
    assert record["filePath"] == "csrc/torch_utils.h"
    assert record["githubUrl"].startswith(
        "https://github.com/vllm-project/vllm/blob/v0.33.0/csrc/torch_utils.h#L"
    )


def test_a_macro_forwarding_its_own_condition_is_not_a_site() -> None:
    source = "#define CUDA_KERNEL_ASSERT_VERBOSE(cond, ...) \\\n  CUDA_KERNEL_ASSERT(cond)\n"
    assert _templates(source) == []
    kernel = "__global__ void k(int i, int n) {\n  CUDA_KERNEL_ASSERT(i < n);\n}\n"
    assert _templates(kernel) == [(2, "k", "RuntimeError", "{where}Assertion `i < n` failed.")]


def test_the_installed_torch_headers_are_filed_where_the_repository_keeps_them(
    tmp_path: Path,
) -> None:
    torch = pytest.importorskip("torch")
    header = "torch/include/ATen/native/layer_norm.h"
    (tmp_path / header).parent.mkdir(parents=True)
    shutil.copy(Path(torch.__file__).parent.parent / header, tmp_path / header)
    result = harvest_tree(
        tmp_path, repo="pytorch/pytorch", ref="v2.13.0", analyzed_at="x", native_root=tmp_path
    )
    message = (
        "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
        "one element, but got normalized_shape = {normalized_shape}"
    )
    found = [
        d.record
        for d in result.drafts
        if d.record["filePath"] == "aten/src/ATen/native/layer_norm.h"
        and d.record["errorMessage"] == message
    ]
    assert [(r["lineNumber"], r["errorClass"]) for r in found] == [
        (22, "RuntimeError"),
        (60, "RuntimeError"),
    ]
    assert len({r["id"] for r in found}) == 2  # two sites, two records
    assert found[0]["githubUrl"].startswith(
        "https://github.com/pytorch/pytorch/blob/v2.13.0/aten/src/ATen/native/layer_norm.h#L"
    )


def test_a_check_with_a_class_names_it_and_a_macros_own_details_may_be_missing() -> None:
    # ATen/cuda/Exceptions.h's AT_CUDNN_CHECK, as torch 2.13.0's headers have it.
    source = (
        "#define AT_CUDNN_CHECK(EXPR, ...)                          \\\n"
        "  do {                                                     \\\n"
        "    cudnnStatus_t status = EXPR;                           \\\n"
        "    if (status != CUDNN_STATUS_SUCCESS) {                  \\\n"
        "        TORCH_CHECK_WITH(CuDNNError, false,                \\\n"
        '            "cuDNN error: ",                               \\\n'
        "            cudnnGetErrorString(status),                   \\\n"
        '            ". This error may appear if you passed in a non-contiguous input.",'
        " ##__VA_ARGS__); \\\n"
        "    }                                                      \\\n"
        "  } while (0)\n"
        'void f() { TORCH_CHECK_WITH(DistBackendError, ok, "collective ", name, " failed"); }\n'
        'void g() { TORCH_CHECK_WITH(UnknownError, ok, "a class c10 does not have"); }\n'
    )
    sites, skipped = native_sites(source)
    cudnn, collective = sites
    assert cudnn.error_class == "RuntimeError"  # c10's CuDNNError is a c10::Error
    assert cudnn.message.template == (
        "cuDNN error: {cudnnGetErrorString_status}. This error may appear if you passed in a "
        "non-contiguous input.{details}"
    )
    pattern = re.compile(cudnn.message.pattern)
    bare = "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
    assert pattern.fullmatch(bare + "non-contiguous input.")
    assert pattern.fullmatch(bare + "non-contiguous input. Shapes: [2, 3]")
    assert collective.error_class == "torch.distributed.DistBackendError"
    assert collective.guard == "ok"
    assert collective.message.template == "collective {name} failed"
    assert skipped[SkipReason.DYNAMIC_CLASS] == 1
