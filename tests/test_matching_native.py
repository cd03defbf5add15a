"""Native messages on a store holding data/: torch's CUDA errors with their asynchronous-report
tail, a device-side assert after its kernel's assertion lines, and a catalogue entry against a
more specific site."""

import copy

import pytest

from app.matching.native import (
    device_side_assert,
    in_cuda_words,
    is_kernel_assertion,
    is_tail_line,
    raised_from_elsewhere,
    without_place,
    without_tail,
)
from app.matching.service import match_text
from app.matching.tracebacks.parse import parse_exceptions
from app.records import service as records
from tests.helpers.matching import data_store

DEVICE_SIDE_ASSERT = "7087d0ce19a5cdec"
INVALID_ORDINAL = "f59af6fbbd5560a7"
CONFIDENT = 50.0
SEARCH_LINE = (
    "Search for `cudaErrorIllegalInstruction' in "
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html "
    "for more information.\n"
)
TAIL = (
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
ASSERTION = (
    "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1422: indexSelectLargeIndex: block: "
    "[31,0,0], thread: [{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
)
EMBEDDING = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 41, in <module>\n'
    "    logits = model(input_ids)\n"
    '  File "/usr/lib/python3.12/site-packages/torch/nn/modules/sparse.py", line 190, in forward\n'
    "    return F.embedding(\n"
    "torch.AcceleratorError: CUDA error: device-side assert triggered\n"
)


@pytest.fixture
def store(settings):
    with data_store(settings) as opened:
        yield opened


def _stored_native_record(session, record_id: str, **fields) -> dict:
    """The device-side assert record of data/ made into another native site, and stored."""
    base = copy.deepcopy(records.get_record(session, DEVICE_SIDE_ASSERT).record.model_dump())
    record = base | {"id": record_id, "slug": f"site-{record_id}"} | fields
    records.write_records(session, [record])
    session.commit()
    return record


def test_the_tail_is_cut_from_a_message_and_its_lines_are_known() -> None:
    message = "CUDA error: invalid device ordinal\n" + TAIL
    assert without_tail(message) == "CUDA error: invalid device ordinal"
    assert (
        without_tail("CUDA error: invalid device ordinal") == "CUDA error: invalid device ordinal"
    )
    assert all(is_tail_line(line) for line in (SEARCH_LINE + TAIL).splitlines())
    assert without_tail(
        "CUDA error: an illegal instruction was encountered\n" + SEARCH_LINE + TAIL
    ) == ("CUDA error: an illegal instruction was encountered")
    assert not is_tail_line("CUDA error: invalid device ordinal")
    assert is_kernel_assertion(ASSERTION.format(t=0))
    assert not is_kernel_assertion("AssertionError: Torch not compiled with CUDA enabled")


def test_a_cuda_error_with_its_tail_gets_its_record_confidently(store) -> None:
    session, matcher = store
    text = EMBEDDING.replace("device-side assert triggered", "invalid device ordinal") + TAIL
    result = match_text(matcher, session, text)
    top = result.matches[0]
    assert top.id == INVALID_ORDINAL, [(m.id, m.score, m.reasons) for m in result.matches]
    assert top.score >= CONFIDENT
    assert "pattern matches the whole exception message" in top.reasons


HIP_TAIL = (
    "HIP kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing AMD_SERIALIZE_KERNEL=3\n"
    "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\n"
)


def test_a_rocm_build_s_message_is_read_in_cuda_s_words(store) -> None:
    """torch's ROCm build prints the CUDA check's messages turned to HIP, with a tail of its
    own: the CUDA record answers it as confidently as the CUDA wording."""
    session, matcher = store
    assert in_cuda_words("HIP error: invalid device ordinal") == (
        "CUDA error: invalid device ordinal"
    )
    assert in_cuda_words("CUDA error: invalid device ordinal") is None
    assert in_cuda_words("CHIP error") is None
    assert without_tail("HIP error: invalid device ordinal\n" + HIP_TAIL) == (
        "HIP error: invalid device ordinal"
    )
    assert all(is_tail_line(line) for line in HIP_TAIL.splitlines())
    text = EMBEDDING.replace(
        "torch.AcceleratorError: CUDA error: device-side assert triggered",
        "RuntimeError: HIP error: invalid device ordinal",
    )
    result = match_text(matcher, session, text + HIP_TAIL)
    top = result.matches[0]
    assert top.id == INVALID_ORDINAL, [(m.id, m.score, m.reasons) for m in result.matches]
    assert top.score >= CONFIDENT
    assert "pattern matches the whole exception message" in top.reasons


def test_a_device_side_assert_is_one_answer_with_its_kernel_lines(store) -> None:
    """No record of the store holds torch's kernel check: the record made of its line (the
    file, the line, the kernel, the condition) leads, and the CUDA error that reports it is
    the same answer."""
    session, matcher = store
    text = ASSERTION.format(t=16) + ASSERTION.format(t=17) + EMBEDDING + TAIL
    result = match_text(matcher, session, text)
    assert device_side_assert(result.exceptions) == 0
    top = result.matches[0]
    made = matcher.statements.get(top.id)
    assert made is not None, [(m.id, m.score) for m in result.matches]
    assert (made.record.file_path, made.record.line_number) == (
        "aten/src/ATen/native/cuda/Indexing.cu",
        1422,
    )
    assert made.record.error_message == "Assertion `srcIndex < srcSelectDimSize` failed."
    assert made.record.error_class == "torch.AcceleratorError"  # as the report names it
    assert [other.id for other in top.same_message] == [DEVICE_SIDE_ASSERT]
    assert top.exception_index == 0
    assert top.score >= CONFIDENT
    assert len([m for m in result.matches if m.score >= CONFIDENT]) == 1
    alone = match_text(matcher, session, EMBEDDING + TAIL)
    assert alone.matches[0].id == DEVICE_SIDE_ASSERT  # no assertion line: the catalogue entry


def test_the_kernels_own_assertion_site_wins_where_the_paste_shows_it(store) -> None:
    session, matcher = store
    _stored_native_record(
        session,
        "00000000000000a1",
        errorMessage="Assertion `srcIndex < srcSelectDimSize` failed.",
        messagePattern=r"Assertion `srcIndex < srcSelectDimSize` failed\.",
        filePath="aten/src/ATen/native/cuda/Indexing.cu",
    )
    text = ASSERTION.format(t=16) + ASSERTION.format(t=17) + EMBEDDING + TAIL
    result = match_text(matcher, session, text)
    ids = [m.id for m in result.matches]
    assert ids[0] == "00000000000000a1", ids
    top = result.matches[0]
    assert [other.id for other in top.same_message] == [DEVICE_SIDE_ASSERT]  # one answer
    assert top.exception_index == 0
    assert (
        "pattern matches the kernel assertion printed before the device-side assert" in top.reasons
    )
    alone = match_text(matcher, session, EMBEDDING + TAIL)
    assert alone.matches[0].id == DEVICE_SIDE_ASSERT  # no assertion line: the catalogue entry


def test_the_line_naming_the_error_code_is_cut_with_the_tail(store) -> None:
    """torch 2.9 and later print the runtime's error code before the tail: a record whose
    pattern knows nothing of that line still matches the whole message."""
    session, matcher = store
    site = _stored_native_record(
        session,
        "00000000000000a3",
        errorMessage="CUDA error: an illegal instruction was encountered",
        messagePattern=r"CUDA error: an illegal instruction was encountered",
        filePath="c10/cuda/CUDAException.cpp",
    )
    text = EMBEDDING.replace("device-side assert triggered", site["errorMessage"][12:])
    result = match_text(matcher, session, text + SEARCH_LINE + TAIL)
    top = result.matches[0]
    assert top.id == "00000000000000a3", [(m.id, m.score) for m in result.matches[:3]]
    assert "pattern matches the whole exception message" in top.reasons
    assert top.score >= CONFIDENT


def test_the_tail_is_never_what_a_paste_is_matched_on(store) -> None:
    session, matcher = store
    _stored_native_record(
        session,
        "00000000000000a2",
        errorMessage="CUDA kernel errors might be asynchronously reported at some other API call",
        messagePattern="CUDA kernel errors might be asynchronously reported at some other API call",
        filePath="c10/cuda/CUDAMiscFunctions.cpp",
    )
    for text in (EMBEDDING + TAIL, TAIL):
        result = match_text(matcher, session, text)
        assert "00000000000000a2" not in [m.id for m in result.matches]


def test_a_python_site_in_the_frames_wins_over_the_catalogue_entry(store) -> None:
    session, matcher = store
    base = copy.deepcopy(records.get_record(session, "c53f6de81577a6bc").record.model_dump())
    wrapper = base | {
        "id": "00000000000000a3",
        "repo": "sgl-project/sglang",
        "errorClass": "RuntimeError",
        "errorMessage": "CUDA error: {err}",
        "messagePattern": "CUDA error: (?P<err>.+)",
        "filePath": "python/sglang/srt/utils/common.py",
        "lineNumber": 10,
        "sourceCode": None,
        "sourceCodeStart": None,
        "sourceCodeEnd": None,
    }
    records.write_records(session, [wrapper])
    session.commit()
    raised_there = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.12/site-packages/sglang/srt/utils/common.py", line 10, in check\n'
        '    raise RuntimeError(f"CUDA error: {err}")\n'
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert match_text(matcher, session, raised_there).matches[0].id == "00000000000000a3"
    torch_paste = EMBEDDING.replace("device-side assert triggered", "invalid device ordinal")
    result = match_text(matcher, session, torch_paste + TAIL)
    assert result.matches[0].id == INVALID_ORDINAL
    other = [m for m in result.matches if m.id == "00000000000000a3"]
    assert all(m.score < CONFIDENT for m in other)  # another project's, never as likely


def _torch_paste(frame: str, line: str) -> str:
    """A traceback that ends in torch's Python entry point, as the threads paste it."""
    return (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    model = Net().cuda()\n"
        f'  File "/usr/local/lib/python3.10/dist-packages/torch/{frame}\n'
        f"{line}\n"
    )


LAZY_INIT = 'cuda/__init__.py", line 319, in _lazy_init\n    torch._C._cuda_init()'
LINEAR = (
    'nn/modules/linear.py", line 125, in forward\n'
    "    return F.linear(input, self.weight, self.bias)"
)
PASTED = [
    (  # the wording of 2.x, one line (colabtools#5136)
        _torch_paste(
            LAZY_INIT,
            "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
            "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
        ),
        "c242f9ee2933e5bb",
    ),
    (  # found version 11040 (Fooocus#1313)
        _torch_paste(
            LAZY_INIT,
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). "
            "Please update your GPU driver by downloading and installing a new version from the "
            "URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: "
            "https://pytorch.org to install a PyTorch version that has been compiled with your "
            "version of the CUDA driver.",
        ),
        "08fb511a8bb549e2",
    ),
    (  # Qwen#120, VisCPM#3
        _torch_paste(
            LINEAR,
            "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling "
            "`cublasCreate(handle)`",
        ),
        "9c21dca825782b21",
    ),
    (  # clovaai/bros#14
        _torch_paste(
            LINEAR,
            "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( "
            "handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16F, lda, b, CUDA_R_16F, ldb, &fbeta, "
            "c, CUDA_R_16F, ldc, CUDA_R_32F, CUBLAS_GEMM_DFALT_TENSOR_OP)`",
        ),
        "ba464de49ccc4516",
    ),
    (  # xb534/SED#31
        _torch_paste(
            LINEAR,
            "RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling "
            "`cublasSgemmStridedBatched( handle, opa, opb, m, n, k, &alpha, a, lda, stridea, b, "
            "ldb, strideb, &beta, c, ldc, stridec, num_batches)`",
        ),
        "ba464de49ccc4516",
    ),
    (  # Peterande/D-FINE#289: two ranks on one GPU
        (
            "Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", '
            "line 3744, in barrier\n"
            "    work = default_pg.barrier(opts=opts)\n"
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:1691, invalid usage (run with NCCL_DEBUG=WARN for details), "
            "NCCL version 2.19.3\n"
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
            "Last error:\n"
            "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 2000\n"
        ),
        "58588cf5c295bbff",
    ),
    (  # zhoubolei/TRN-pytorch#88, with the tail torch prints today
        _torch_paste(LINEAR, "RuntimeError: CUDA error: misaligned address") + TAIL,
        "0e3bc22a5ce53920",
    ),
    (  # XPixelGroup/BasicSR#211, with the tail torch prints today
        _torch_paste(LINEAR, "RuntimeError: CUDA error: unspecified launch failure") + TAIL,
        "2f12f6c9b6d1c025",
    ),
    (  # the line recent releases add before the tail (smthemex/ComfyUI_DiffuEraser#38's wording)
        _torch_paste(
            LINEAR,
            "torch.AcceleratorError: CUDA error: misaligned address\n"
            "Search for `cudaErrorMisalignedAddress' in "
            "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more "
            "information.",
        )
        + TAIL,
        "0e3bc22a5ce53920",
    ),
]


@pytest.mark.parametrize(("text", "record_id"), PASTED)
def test_an_nvidia_side_error_as_pasted_gets_its_record_first(store, text, record_id) -> None:
    session, matcher = store
    result = match_text(matcher, session, text)
    first = result.matches[0]
    # the record, or the record of the call its message names, the record beside it
    answered = [first.id, *(other.id for other in first.same_message)][:2]
    assert record_id in answered, [(m.id, m.score) for m in result.matches[:3]]
    assert first.score >= CONFIDENT


def test_torch_1x_nccl_wording_raised_as_runtime_error_still_gets_the_record(store) -> None:
    """fanq15/FewX#74: no NCCL explanation, another class than today's DistBackendError."""
    session, matcher = store
    text = (
        "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:32, unhandled "
        "cuda error, NCCL version 2.4.8\n"
    )
    result = match_text(matcher, session, text)
    assert result.matches[0].id == "58588cf5c295bbff", [(m.id, m.score) for m in result.matches]
    assert result.matches[0].captures["error"] == "unhandled cuda error"


FLASH_API = (
    "RuntimeError: FlashAttention only supports Ampere GPUs or newer.\n"
    "Exception raised from mha_fwd at ...\\AppData\\Local\\Temp\\pip-install-onk9dffz\\"
    "flash-attn_8c421b\\csrc\\flash_attn\\flash_api.cpp:370 (most recent call first):\n"
    "00007FF90C6C83C9 c10.dll!c10::Error::Error [<unknown file> @ <unknown line number>]\n"
)


def test_a_c_plus_plus_error_raised_from_another_projects_source_names_it() -> None:
    """flash-attn's wheel raises through c10's check, and c10 prints the check's own file
    under the message; a file of torch's (a build's `../c10/...`) names no other project."""
    found = raised_from_elsewhere(FLASH_API, parse_exceptions(FLASH_API))
    assert list(found) == [0]
    assert found[0].endswith("csrc\\flash_attn\\flash_api.cpp")
    torchs = FLASH_API.replace("...\\AppData", "../c10/cuda").replace("csrc\\flash", "x")
    assert raised_from_elsewhere(torchs, parse_exceptions(torchs)) == {}


def test_a_gloo_message_is_read_without_the_place_it_begins_with(store) -> None:
    """gloo begins its messages with `[FILE:LINE] `: the words after it are what its
    library's literal holds, and the record of that literal answers the whole message."""
    session, matcher = store
    place = "[../third_party/gloo/gloo/transport/tcp/pair.cc:598] "
    said = "Connection closed by peer [172.28.0.12]:43185"
    assert without_place(place + said) == said
    assert without_place(said) is None
    assert without_place(place.strip()) is None
    assert without_place("[rank0]: " + said) is None
    _stored_native_record(
        session,
        "9" * 16,
        errorClass="RuntimeError",
        errorMessage="Connection closed by peer {value}",
        messagePattern="Connection closed by peer (?P<value>(?s:.+?))",
        filePath="torch/lib/libtorch_cpu.so",
    )
    text = EMBEDDING.replace(
        "torch.AcceleratorError: CUDA error: device-side assert triggered",
        f"RuntimeError: {place}{said}",
    )
    top = match_text(matcher, session, text).matches[0]
    assert top.id == "9" * 16
    assert top.components[0].id == "message.full-line", top.components
