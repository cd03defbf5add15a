"""Message literals of compiled libraries: a tiny library built here with gcc, torch's own
libc10.so as installed, the read-only data the release cache keeps of a library, torch's CUDA
build (downloaded), and broken files skipped with their reason."""

import shutil
from pathlib import Path

import pytest
from sqlmodel import Session

from app.harvest import drafts, harvest_tree
from app.harvest.compiled import FOREIGN_LITERAL, UNREADABLE_LIBRARY, library_sites
from app.harvest.site_records import DraftStamp, library_drafts
from app.records import locations
from app.records import service as records
from app.records.filters import RecordFilters
from app.records.validation import record_errors
from app.upstreams.elf import rodata_sections, write_rodata
from tests.helpers.libraries import build_library

STAMP = DraftStamp("pytorch/pytorch", "v2.13.0", "2026-12-05T00:00:00.000Z")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_library(tmp_path_factory.mktemp("elf"))


def test_fragments_of_one_message_are_joined_with_values_between(library: Path) -> None:
    sites, skipped = library_sites(library)
    assert not skipped
    found = {site.message.template: site for site in sites}
    device = found[
        "Expected all tensors to be on the same device, but got {value}, different from other "
        "tensors on {value_2} (when checking argument in method {value_3}"
    ]
    assert device.source_file == "aten/src/ATen/core/adaption.cpp"
    assert device.line is None
    kernel = found["No available kernel.  Aborting execution."]
    assert kernel.error_class == "Exception"  # the literal alone does not say which class
    assertion = found[
        'idx < n INTERNAL ASSERT FAILED at "{file}":{line}, please report a bug to PyTorch. {value}'
    ]
    assert (assertion.source_file, assertion.line, assertion.error_class) == (
        "c10/core/Device.cpp",
        42,
        "RuntimeError",
    )
    assert len(sites) == 3


def test_library_drafts_are_valid_records_filed_under_the_library(library: Path) -> None:
    sites, _ = library_sites(library)
    drafts = library_drafts(sites, "torch/lib/libunit.so", STAMP)
    assert all(not record_errors(draft.record) for draft in drafts)
    by_message = {draft.record["errorMessage"]: draft for draft in drafts}
    assertion = by_message[
        'idx < n INTERNAL ASSERT FAILED at "{file}":{line}, please report a bug to PyTorch. {value}'
    ]
    assert assertion.record["filePath"] == "torch/lib/libunit.so"
    assert assertion.record["githubUrl"] == (
        "https://github.com/pytorch/pytorch/blob/v2.13.0/c10/core/Device.cpp#L42"
    )
    assert assertion.context == {
        "library": "torch/lib/libunit.so",
        "sourceFile": "c10/core/Device.cpp",
        "sourceLine": 42,
    }
    again = library_drafts(sites, "torch/lib/libunit.so", STAMP)
    assert [d.record["id"] for d in again] == [d.record["id"] for d in drafts]


def test_a_broken_library_is_skipped_with_its_reason(library: Path, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.so"
    garbage.write_bytes(b"not an ELF file at all")
    cut = tmp_path / "cut.so"
    cut.write_bytes(library.read_bytes()[:200])
    for path in (garbage, cut, tmp_path / "missing.so"):
        sites, skipped = library_sites(path)
        assert sites == []
        assert skipped == {UNREADABLE_LIBRARY: 1}
    with pytest.raises(ValueError, match="ELF"):
        rodata_sections(garbage)


def test_the_kept_read_only_data_gives_the_sites_the_library_gives(
    library: Path, tmp_path: Path
) -> None:
    """The release cache keeps only a library's `.rodata` sections (the CUDA build's, of a
    wheel it deletes): read back, they give the same sites, offsets included."""
    torch = pytest.importorskip("torch")
    for path in (library, Path(torch.__file__).parent / "lib" / "libc10.so"):
        kept = tmp_path / f"{path.name}.rodata"
        write_rodata(rodata_sections(path), kept)
        assert kept.stat().st_size < path.stat().st_size
        from_library, skipped = library_sites(path)
        from_kept, kept_skipped = library_sites(kept)
        assert from_kept == from_library
        assert (skipped, kept_skipped) == ({}, {})
        assert len(from_kept) >= 3


def test_a_cut_kept_file_is_skipped_with_its_reason(library: Path, tmp_path: Path) -> None:
    kept = tmp_path / "libunit.so.rodata"
    write_rodata(rodata_sections(library), kept)
    kept.write_bytes(kept.read_bytes()[:-10])
    assert library_sites(kept) == ([], {UNREADABLE_LIBRARY: 1})


# A CUDA build's literals: its messages may begin with an acronym; names, cuDNN's frontend's
# descriptor logs and protobuf's own CHECKs are no messages.
ACRONYMS = r"""
const char* oom(void) { return "CUDA out of memory. Tried to allocate more than 1EB memory."; }
const char* nccl(void) { return "NCCL communicator not initialized."; }
const char* name(void) { return "CUDNN_BACKEND_OPERATION: SetAttribute CUDNN_ATTR_X Failed"; }
const char* log(void) { return "INFO: Querying engine config properties."; }
const char* check(void) { return "CHECK failed: field->is_repeated(): "; }
"""


def test_a_message_may_begin_with_an_acronym_but_not_with_a_name(tmp_path: Path) -> None:
    sites, _ = library_sites(build_library(tmp_path, ACRONYMS))
    assert {site.message.template for site in sites} == {
        "CUDA out of memory. Tried to allocate more than 1EB memory.",
        "NCCL communicator not initialized.",
    }


# torch 2.0's libtorch_cpu.so links LLVM in, built at /tmp/llvm: its strings follow its files'.
LINKED_IN = r"""
const char* torch_unit(void) { return "/__w/pytorch/pytorch/aten/src/ATen/core/adaption.cpp"; }
const char* torch_message(void) { return "No available kernel.  Aborting execution."; }
const char* llvm_unit(void) { return "/tmp/llvm/lib/Support/APInt.cpp"; }
const char* llvm_message(void) { return "Code section ended prematurely"; }
const char* llvm_assert(void) {
  return "idx < n INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/c10/core/Device.cpp\":42, "
         "please report a bug to PyTorch. ";
}
"""


def test_the_literals_of_a_library_linked_in_are_left_out(tmp_path: Path) -> None:
    """A literal after the `__FILE__` literal of a library built outside torch's tree is
    that library's; an internal assert naming torch's own file stays torch's."""
    sites, skipped = library_sites(build_library(tmp_path, LINKED_IN))
    assert {site.message.template: site.source_file for site in sites} == {
        "No available kernel.  Aborting execution.": "aten/src/ATen/core/adaption.cpp",
        'idx < n INTERNAL ASSERT FAILED at "{file}":{line}, please report a bug to PyTorch. '
        "{value}": "c10/core/Device.cpp",
    }
    assert skipped == {FOREIGN_LITERAL: 1}


# torch builds gloo in from its submodule: gloo's messages follow gloo's file as torch's
# follow theirs.
SUBMODULE = r"""
const char* torch_unit(void) { return "/pytorch/torch/csrc/api/src/xpu.cpp"; }
const char* torch_message(void) { return "XPU device count is not available here"; }
const char* gloo_unit(void) { return "/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc"; }
const char* gloo_message(void) { return "Connection closed by peer "; }
"""


def test_a_submodules_messages_are_its_files_and_link_to_its_pinned_commit(
    tmp_path: Path,
) -> None:
    """gloo's `Connection closed by peer` is pair.cc's, not the torch file before it; its
    link is the folder that lists each submodule at the commit the tag pins, since the
    repository's tree holds no file of gloo's."""
    sites, _ = library_sites(build_library(tmp_path, SUBMODULE))
    assert {site.message.template: site.source_file for site in sites} == {
        "XPU device count is not available here": "torch/csrc/api/src/xpu.cpp",
        "Connection closed by peer {value}": "third_party/gloo/gloo/transport/tcp/pair.cc",
    }
    links = {
        draft.record["errorMessage"]: draft.record["githubUrl"]
        for draft in library_drafts(sites, "torch/lib/libtorch_cpu.so", STAMP)
    }
    assert links["Connection closed by peer {value}"] == (
        "https://github.com/pytorch/pytorch/blob/v2.13.0/third_party"
    )
    assert links["XPU device count is not available here"] == (
        "https://github.com/pytorch/pytorch/blob/v2.13.0/torch/csrc/api/src/xpu.cpp"
    )


# Literals that lie after a message's but do not continue it: a file's path (torch 2.0's
# builds keep `../c10/...`) and an internal assert's own literal (`!cond INTERNAL ...`).
NOT_CONTINUED = r"""
const char* format(void) { return "Unknown memory format for the tensor "; }
const char* path(void) { return "../c10/core/MemoryFormat.h"; }
const char* padding(void) { return "Padding must be non-negative but got "; }
const char* assertion(void) {
  return "!tensors.empty() INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/c10/core/A.cpp\":7, "
         "please report a bug to PyTorch. ";
}
"""


def test_a_path_or_an_assert_after_a_message_does_not_continue_it(tmp_path: Path) -> None:
    sites, _ = library_sites(build_library(tmp_path, NOT_CONTINUED))
    assert {site.message.template for site in sites} == {
        "Unknown memory format for the tensor {value}",
        "Padding must be non-negative but got {value}",
    }  # the assert's own literal begins with no letter: it is no site of its own


@pytest.mark.network
def test_torchs_cuda_build_gives_the_messages_only_it_has(tmp_path: Path) -> None:
    """torch 2.13.0's Linux CUDA wheel, read through the release cache (its libraries'
    read-only data kept, the wheel deleted): the caching allocator's out-of-memory message,
    cuDNN's, NCCL's and cuSOLVER's, each filed under its library with its source file; none
    of them is in the CPU build installed here."""
    from tests.helpers.releases import RELEASES

    release = drafts.resolve_release("torch==2.13.0", releases=RELEASES)
    assert release.build_skipped is None
    assert release.build_root is not None
    kept = sorted(path.name for path in (release.build_root / "torch" / "lib").iterdir())
    assert kept == [
        "libc10.so.rodata",
        "libc10_cuda.so.rodata",
        "libtorch_cpu.so.rodata",
        "libtorch_cuda.so.rodata",
        "libtorch_cuda_linalg.so.rodata",
        "libtorch_python.so.rodata",
    ]
    assert not list(release.build_root.rglob("*.whl"))
    result = harvest_tree(
        tmp_path,
        repo="pytorch/pytorch",
        ref="v2.13.0",
        analyzed_at="2026-12-06T00:00:00.000Z",
        build_root=release.build_root,
    )
    by_message = {draft.record["errorMessage"]: draft for draft in result.drafts}
    expected = {
        "CUDA out of memory. Tried to allocate more than 1EB memory.": (
            "torch/lib/libc10_cuda.so",
            "c10/cuda/CUDACachingAllocator.cpp",
        ),
        "Unable to find a valid cuDNN algorithm to run convolution": (
            "torch/lib/libtorch_cuda.so",
            "aten/src/ATen/native/cudnn/Conv_v7.cpp",
        ),
        "ProcessGroupNCCL does not support recvAnysource": (
            "torch/lib/libtorch_cuda.so",
            "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
        ),
        "cusolver gesvd only supports matrix with sizes m >= n": (
            "torch/lib/libtorch_cuda_linalg.so",
            "aten/src/ATen/native/cuda/linalg/BatchLinearAlgebraLib.cpp",
        ),
    }
    for message, (library, source) in expected.items():
        draft = by_message[message]
        assert (draft.record["filePath"], draft.context["sourceFile"]) == (library, source)
        assert not record_errors(draft.record)
    assert any(m.startswith("CUDA out of memory. Tried to allocate {value}") for m in by_message)
    assert len(result.drafts) == result.library_sites > 14_000  # 14,704 in 2.13.0
    torch = pytest.importorskip("torch")
    installed = Path(torch.__file__).parent / "lib"
    if not (installed / "libc10_cuda.so").is_file():  # the CPU build: none of them is there
        cpu = {
            site.message.template
            for name in ("libc10", "libtorch_cpu", "libtorch_python")
            for site in library_sites(installed / f"{name}.so")[0]
        }
        assert not set(expected) & cpu


def test_torchs_own_libc10_gives_its_allocator_messages() -> None:
    torch = pytest.importorskip("torch")
    sites, _ = library_sites(Path(torch.__file__).parent / "lib" / "libc10.so")
    found = {site.message.template: site for site in sites}
    message = found["CachingAllocator option max_split_size_mb too small, must be >= {value}"]
    assert message.source_file == "c10/core/AllocatorConfig.cpp"


def test_a_release_with_the_library_stores_its_messages_as_drafts(
    library: Path, session: Session, tmp_path: Path
) -> None:
    root = tmp_path / "site-packages"
    (root / "torch" / "lib").mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text("")
    shutil.copy(library, root / "torch" / "lib" / "libc10.so")
    header = root / "torch" / "include" / "c10" / "core" / "Kernel.h"
    header.parent.mkdir(parents=True)
    header.write_text(
        'void pick() {\n  AT_ERROR("No available kernel.  Aborting execution.");\n}\n'
    )
    release = drafts.resolve_release(str(root), repo="pytorch/pytorch", ref="v2.13.0")
    result, counts = drafts.harvest_release(session, release)
    assert (result.native_sites, result.library_sites, counts.created) == (1, 2, 3)
    page = records.list_records(session, RecordFilters(repo="pytorch/pytorch"), 10)
    stored = {item.record.error_message: item for item in page.items}
    kernel = stored["No available kernel.  Aborting execution."]  # the header's, not a copy
    assert (kernel.record.file_path, kernel.record.line_number) == ("c10/core/Kernel.h", 2)
    device = stored[
        "Expected all tensors to be on the same device, but got {value}, different from other "
        "tensors on {value_2} (when checking argument in method {value_3}"
    ]
    assert device.record.file_path == "torch/lib/libc10.so"
    [location] = locations.record_locations(session, [device.id])[device.id]
    assert location.release == "pytorch/pytorch@v2.13.0"
    assert location.context is not None
    assert location.context["sourceFile"] == "aten/src/ATen/core/adaption.cpp"
