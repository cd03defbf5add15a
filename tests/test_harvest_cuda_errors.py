"""The CUDA runtime's error catalogue: its table read from a real ELF library's relocations,
its doc comments, and, from NVIDIA's wheels on the index, one record per error code where
torch reports it, matched before a generic `CUDA error: {err}` and explained in NVIDIA's
words."""

from pathlib import Path

import pytest

from app.harvest import cuda_errors, drafts
from app.harvest.cuda_errors import runtime_errors
from app.matching.service import match_text
from app.records import service as records
from app.upstreams import release_cache
from app.upstreams.nvidia_packages import CUDA_RUNTIME, RELEASE_FILE
from app.upstreams.nvidia_packages import RUNTIME_HEADER as HEADER
from app.upstreams.nvidia_packages import RUNTIME_LIBRARY as LIBRARY
from tests.helpers.libraries import build_library, torch_release_without_python
from tests.helpers.matching import data_store

CUDA_EXCEPTION = "c10/cuda/CUDAException.cpp"
# data/'s curated records of catalogue entries: they claim the harvested sites.
CURATED = {
    "0e3bc22a5ce53920": "cudaErrorMisalignedAddress",
    "2f12f6c9b6d1c025": "cudaErrorLaunchFailure",
    "7087d0ce19a5cdec": "cudaErrorAssert",
    "a85e5b91e9b80a8c": "cudaErrorIllegalAddress",
    "b22406073e272564": "cudaErrorNoKernelImageForDevice",
    "ccbb13bfece44d3a": "cudaErrorMemoryAllocation",
    "f59af6fbbd5560a7": "cudaErrorInvalidDevice",
    "ffb8e23a4a4cdb41": "cudaErrorStreamCaptureUnsupported",
}
# A table laid out as the runtime's: {code, name, text} rows of pointers into .rodata.
TABLE_C = r"""
struct row { int code; const char *name; const char *text; };
const struct row errors[] = {
    {0, "cudaSuccess", "no error"},
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {710, "cudaErrorAssert", "device-side assert triggered"},
    {999, "notAnError", "left out"},
};
const struct row *table(void) { return errors; }
"""
HEADER_TEXT = """enum __device_builtin__ cudaError
{
    /**
     * The API call returned with no errors.
     */
    cudaSuccess                           =      0,

    /**
     * One or more of the parameters is not within an acceptable range (see
     * ::cudaMalloc and \\ref cudaDeviceProp).
     */
    cudaErrorInvalidValue                 =     1,

    /**
     * \\deprecated
     * This error return is deprecated.
     */
    cudaErrorInvalidDevice                =   101,
};
"""
TAIL = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "serve.py", line 12, in <module>\n'
    "    model.to('cuda')\n"
    '  File "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1371, in to\n'
    "    return self._apply(convert)\n"
    "torch.AcceleratorError: CUDA error: {text}\n"
    "Search for `{name}' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
    "group__CUDART__TYPES.html for more information.\n"
)


@pytest.fixture
def runtime_folder(tmp_path: Path) -> Path:
    """A runtime folder whose library is a real shared object with the runtime's layout."""
    folder = tmp_path / "runtime"
    folder.mkdir()
    build_library(folder, TABLE_C, LIBRARY)
    (folder / HEADER).write_text(HEADER_TEXT)
    (folder / RELEASE_FILE).write_text("nvidia-cuda-runtime==0.0.1\n")
    return folder


def test_the_table_is_read_from_the_relocations_of_a_real_library(runtime_folder: Path) -> None:
    errors = runtime_errors(runtime_folder)
    assert [(e.code, e.name, e.text) for e in errors] == [
        (1, "cudaErrorInvalidValue", "invalid argument"),
        (101, "cudaErrorInvalidDevice", "invalid device ordinal"),
        (710, "cudaErrorAssert", "device-side assert triggered"),
    ]
    value, device, assertion = errors
    assert value.meaning == (
        "One or more of the parameters is not within an acceptable range (see cudaMalloc "
        "and cudaDeviceProp)."
    )
    assert value.line == 12
    assert not value.deprecated
    assert device.meaning == "This error return is deprecated."
    assert device.deprecated
    assert assertion.meaning is None
    assert assertion.line is None


def test_a_library_that_is_not_elf_or_holds_no_table_is_a_value_error(
    runtime_folder: Path,
) -> None:
    library = runtime_folder / LIBRARY
    data = library.read_bytes()
    library.write_bytes(b"not an ELF file")
    with pytest.raises(ValueError, match="not a 64-bit"):
        runtime_errors(runtime_folder)
    library.write_bytes(data[:200])
    with pytest.raises(ValueError, match="section headers"):
        runtime_errors(runtime_folder)
    build_library(runtime_folder, "int nothing(void) { return 0; }\n", LIBRARY)
    with pytest.raises(ValueError, match="no table"):
        runtime_errors(runtime_folder)


def test_an_unreadable_runtime_is_a_counted_reason_not_a_crash(
    runtime_folder: Path, tmp_path: Path
) -> None:
    (runtime_folder / LIBRARY).write_bytes(b"\x7fELF cut")
    release = _release(tmp_path, runtime_folder)
    result = drafts.extract_release(release).result
    assert result.nvidia_errors == 0
    assert result.skipped[cuda_errors.UNREADABLE_RUNTIME] == 1


def _release(tmp_path: Path, runtime: Path, version: str = "2.13.0") -> drafts.Release:
    return torch_release_without_python(tmp_path, {CUDA_RUNTIME.key: runtime}, version)


@pytest.mark.network
def test_torch_releases_name_their_runtime_and_every_code_is_drafted_and_matched(
    settings, tmp_path: Path
) -> None:
    cache = release_cache.Upstream(tmp_path / "cache")
    newest = cache.ensure_nvidia("torch", "2.13.0", CUDA_RUNTIME)
    older = cache.ensure_nvidia("torch", "2.5.1", CUDA_RUNTIME)
    assert newest is not None
    assert older is not None
    assert (newest / RELEASE_FILE).read_text() == "nvidia-cuda-runtime==13.0.96\n"
    assert (older / RELEASE_FILE).read_text() == "nvidia-cuda-runtime-cu12==12.4.127\n"
    by_name = {error.name: error for error in runtime_errors(newest)}
    assert len(by_name) > 100
    assert by_name["cudaErrorMemoryAllocation"].text == "out of memory"
    assert by_name["cudaErrorNoKernelImageForDevice"].code == 209
    assert "no kernel image available" in (by_name["cudaErrorNoKernelImageForDevice"].meaning or "")
    assert by_name["cudaErrorAssert"].text == "device-side assert triggered"

    with data_store(settings) as (session, matcher):
        result, counts = drafts.harvest_release(session, _release(tmp_path, newest))
        assert result.nvidia_errors == len({error.text for error in by_name.values()})
        assert counts.claimed == len(CURATED)  # the curated records keep their sites
        session.commit()
        error = by_name["cudaErrorIllegalInstruction"]
        text = TRACEBACK.format(text=error.text, name=error.name) + TAIL
        top = match_text(matcher, session, text).matches[0]
        record = records.get_record(session, top.id).record
        assert record.error_code == "cudaErrorIllegalInstruction"
        assert record.file_path == CUDA_EXCEPTION
        assert record.error_class == "torch.AcceleratorError"
        assert "pattern matches the whole exception message" in top.reasons
        for record_id, name in CURATED.items():
            error = by_name[name]
            curated = TRACEBACK.format(text=error.text, name=error.name) + TAIL
            assert match_text(matcher, session, curated).matches[0].id == record_id

    with data_store(settings) as (session, _):
        result, _ = drafts.harvest_release(session, _release(tmp_path, older, "2.5.1"))
        classes = {draft.record["errorClass"] for draft in result.drafts}
        assert classes == {"RuntimeError"}  # torch 2.5 had no AcceleratorError
