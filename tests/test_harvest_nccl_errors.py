"""NCCL's result codes: `nccl.h`'s enum, the texts of a real library's read-only data (in the
compiler's order, found by the words of each code's name), the class the release's check
raises, and, from NVIDIA's wheels on the index, one record per code at torch's NCCL check,
matched in a real torch NCCL error."""

from pathlib import Path

import pytest

from app.harvest import drafts
from app.harvest.nccl_errors import UNREADABLE_NCCL, nccl_error_class, nccl_results
from app.matching.service import match_text
from app.records import service as records
from app.upstreams import release_cache
from app.upstreams.elf import read_only_data, rodata_sections, write_rodata
from app.upstreams.nvidia_packages import NCCL, NCCL_HEADER, NCCL_RODATA, RELEASE_FILE
from tests.helpers.libraries import build_library, torch_release_without_python
from tests.helpers.matching import data_store

NCCL_CHECK = "torch/csrc/distributed/c10d/NCCLUtils.hpp"
HEADER_TEXT = """/* Error type */
typedef enum { ncclSuccess                 =  0,
               ncclUnhandledCudaError      =  1,
               ncclSystemError             =  2,
               ncclRemoteError             =  3,
               ncclNumResults              =  4 } ncclResult_t;
"""
# A switch's strings as an older compiler lays them out: the default first, out of order.
LIBRARY_C = r"""
const char *error_string(int code) {
    switch (code) {
        case 0: return "no error";
        case 2: return "unhandled system error";
        case 3: return "remote process exited or there was a network error";
        case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
        default: return "unknown result code";
    }
}
"""
CALLER = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
PASTE = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/app/train.py", line 30, in <module>\n'
    "[rank1]:     dist.barrier()\n"
    '[rank1]:   File "/usr/local/lib/python3.12/site-packages/torch/distributed/'
    'distributed_c10d.py", line 4811, in barrier\n'
    "[rank1]:     work = group.barrier(opts=opts)\n"
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/"
    "distributed/c10d/ProcessGroupNCCL.cpp:3690, {text}, NCCL version 2.29.7\n"
    "[rank1]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
    "[rank1]: Last error:\n"
    "[rank1]: Cuda failure 'out of memory'\n"
)


@pytest.fixture
def nccl_folder(tmp_path: Path) -> Path:
    """What the cache keeps of an NCCL release, its library a real shared object."""
    library = build_library(tmp_path, LIBRARY_C, "libnccl.so")
    folder = tmp_path / "nccl"
    folder.mkdir()
    write_rodata(rodata_sections(library), folder / NCCL_RODATA)
    (folder / NCCL_HEADER).write_text(HEADER_TEXT)
    (folder / RELEASE_FILE).write_text("nvidia-nccl-cu12==0.0.1\n")
    return folder


def test_each_code_gets_the_text_holding_its_name_words_whatever_their_order(
    nccl_folder: Path,
) -> None:
    results = nccl_results(
        (nccl_folder / NCCL_HEADER).read_text(), read_only_data(nccl_folder / NCCL_RODATA)
    )
    assert [(r.code, r.name, r.text) for r in results] == [
        (
            1,
            "ncclUnhandledCudaError",
            "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        ),
        (2, "ncclSystemError", "unhandled system error"),
        (3, "ncclRemoteError", "remote process exited or there was a network error"),
    ]


def test_a_header_or_library_without_the_codes_is_a_value_error(nccl_folder: Path) -> None:
    sections = read_only_data(nccl_folder / NCCL_RODATA)
    with pytest.raises(ValueError, match="ncclResult_t"):
        nccl_results("typedef int ncclResult_t;", sections)
    missing = HEADER_TEXT.replace("ncclRemoteError ", "ncclTimeout ")
    with pytest.raises(ValueError, match="no NCCL result texts"):
        nccl_results(missing, sections)
    with pytest.raises(ValueError, match="no NCCL result texts"):
        nccl_results(HEADER_TEXT, [(0, b"\0no error\0")])


def test_an_unreadable_package_is_a_counted_reason(nccl_folder: Path, tmp_path: Path) -> None:
    (nccl_folder / NCCL_RODATA).write_bytes(b"neither ELF nor kept data")
    release = torch_release_without_python(tmp_path, {NCCL.key: nccl_folder})
    result = drafts.extract_release(release).result
    assert result.nvidia_errors == 0
    assert result.skipped[UNREADABLE_NCCL] == 1


def test_the_class_is_read_from_the_release_check(tmp_path: Path) -> None:
    header = tmp_path / "NCCLUtils.hpp"
    assert nccl_error_class(None) == "torch.distributed.DistBackendError"
    header.write_text(
        '      std::string err = "NCCL error in: " + std::string(__FILE__) + ":" +\n'
        "      throw std::runtime_error(err);\n"
    )
    assert nccl_error_class(header) == "RuntimeError"
    header.write_text(
        '      std::string err = "NCCL error in: " + std::string(__FILE__) + ":" +\n'
        "      TORCH_CHECK_WITH(DistBackendError, false, err);\n"
    )
    assert nccl_error_class(header) == "torch.distributed.DistBackendError"


@pytest.mark.network
def test_torch_2_13_gets_a_record_per_nccl_code_that_a_real_error_matches(
    settings, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    cache = release_cache.Upstream(tmp_path / "cache")
    folder = cache.ensure_nvidia("torch", "2.13.0", NCCL)
    assert folder is not None
    assert (folder / RELEASE_FILE).read_text() == "nvidia-nccl-cu13==2.29.7\n"
    assert (folder / NCCL_RODATA).stat().st_size < 5 * 2**20  # of a 250 MB library
    assert (
        release_cache.Upstream(tmp_path / "off", build_libraries=False).ensure_nvidia(
            "torch", "2.13.0", NCCL
        )
        is None
    )
    installed = Path(__import__("torch").__file__).parent.parent  # its headers: the class
    release = torch_release_without_python(tmp_path, {NCCL.key: folder}, native_root=installed)
    with data_store(settings) as (session, matcher):
        result, _ = drafts.harvest_release(session, release)
        codes = {d.record["errorCode"]: d.record for d in result.drafts if d.record["errorCode"]}
        assert {"ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError"} <= set(codes)
        record = codes["ncclUnhandledCudaError"]
        assert record["filePath"] == NCCL_CHECK
        assert record["errorClass"] == "torch.distributed.DistBackendError"
        session.commit()
        text = "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
        top = match_text(matcher, session, PASTE.format(text=text)).matches[0]
        # answered at the call the message names, the code's record beside it
        assert (top.record.file_path, top.record.line_number) == (CALLER, 3690)
        stored = records.get_record(session, top.same_message[0].id)
        assert stored is not None
        assert stored.record.error_code == "ncclUnhandledCudaError"
        assert "pattern matches the whole exception message" in top.reasons
