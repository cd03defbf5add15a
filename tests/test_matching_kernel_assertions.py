"""A torch kernel's failed check answered from the line it printed: read from the shapes real
pastes show (a build's relative path, conda's and the docker image's absolute ones), once per
check however many threads printed it, and served by the match and GET like a stored record."""

import re
from collections.abc import Callable

from fastapi.testclient import TestClient

from app.matching.kernel_assertions import kernel_assertions, kernel_record
from app.matching.logtext import clean_lines

# As torch 2.4's conda build, a pip wheel (relative) and the docker image printed them.
CONDA = (
    "/opt/conda/conda-bld/pytorch_1720538643151/work/aten/src/ATen/native/cuda/Indexing.cu:1231:"
    " indexSelectSmallIndex: block: [31,0,0], thread: [{t},0,0] Assertion `srcIndex < "
    "srcSelectDimSize` failed.\n"
)
RELATIVE = (
    "../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [1193,0,0], thread: "
    '[124,0,0] Assertion `-sizes[i] <= index && index < sizes[i] && "index out of bounds"` '
    "failed.\n"
)
NLL = (
    "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: "
    "block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
)
REPORT = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "    loss.item()\n"
    "torch.AcceleratorError: CUDA error: device-side assert triggered\n"
)


def test_each_failed_check_is_read_once_with_its_repository_path() -> None:
    text = CONDA.format(t=1) + CONDA.format(t=2) + RELATIVE + NLL
    found = kernel_assertions(clean_lines(text))
    assert [(a.file_path, a.line, a.function) for a in found] == [
        ("aten/src/ATen/native/cuda/Indexing.cu", 1231, "indexSelectSmallIndex"),
        ("aten/src/ATen/native/cuda/IndexKernel.cu", 92, "operator()"),
        ("aten/src/ATen/native/cuda/Loss.cu", 250, "nll_loss_forward_reduce_cuda_kernel_2d"),
    ]
    assert found[1].condition == '-sizes[i] <= index && index < sizes[i] && "index out of bounds"'


def test_a_line_without_torchs_path_is_no_check_of_torchs() -> None:
    """vLLM's own kernels print `csrc/` paths, which its harvested records answer; a line
    cut before the path names no file."""
    text = (
        "csrc/moe/topk.cu:40: topk: block: [0,0,0], thread: [0,0,0] Assertion `k > 0` failed.\n"
        "IndexKernel.cu:91: block: [0,0,0], thread: [0,0,0] Assertion `index >= 0` failed.\n"
    )
    assert kernel_assertions(clean_lines(text)) == []


def test_the_record_names_the_check_and_matches_its_message() -> None:
    (assertion,) = kernel_assertions(clean_lines(NLL))
    record = kernel_record(assertion, "RuntimeError").record
    assert (record.file_path, record.line_number, record.error_class) == (
        "aten/src/ATen/native/cuda/Loss.cu",
        250,
        "RuntimeError",
    )
    assert record.message_pattern is not None
    assert re.fullmatch(record.message_pattern, "Assertion `t >= 0 && t < n_classes` failed.")
    assert record.github_url is not None
    assert record.github_url.endswith("/aten/src/ATen/native/cuda/Loss.cu")
    assert "nll_loss_forward_reduce_cuda_kernel_2d" in (record.documentation or "")


def test_a_paste_of_kernel_lines_alone_is_answered_and_get_reads_the_record(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    matches = client.post("/api/match", json={"text": RELATIVE * 3}).json()["matches"]
    assert [m["record"]["filePath"] for m in matches] == [
        "aten/src/ATen/native/cuda/IndexKernel.cu"
    ]
    first = matches[0]
    assert first["components"][0]["id"] == "message.kernel-assertion"
    assert first["score"] >= 50
    document = client.get(f"/api/errors/{first['id']}")
    assert document.status_code == 200, document.text
    assert document.json()["record"]["lineNumber"] == 92
    assert client.get(f"/errors/{first['id']}").status_code == 200


def test_the_report_of_the_check_names_the_records_class(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    matches = client.post("/api/match", json={"text": NLL + REPORT}).json()["matches"]
    first = matches[0]
    assert first["record"]["filePath"] == "aten/src/ATen/native/cuda/Loss.cu"
    assert first["record"]["errorClass"] == "torch.AcceleratorError"
    assert first["exceptionIndex"] == 0
