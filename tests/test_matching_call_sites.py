"""A native check whose message names the line that called it is answered at that call: torch's
NCCL check, written in NCCLUtils.hpp and failing in ProcessGroupNCCL.cpp, on the curated
record of data/records and on the shapes real pastes show (a build's relative path, a
docker image's absolute one, a title cut short)."""

from collections.abc import Callable

from fastapi.testclient import TestClient

from app.matching.call_sites import CallSite, named_call_site
from tests.helpers.records import DATA_DIR

NCCL_CHECK = "torch/csrc/distributed/c10d/NCCLUtils.hpp"
CALLER = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp"
# As torch 2.1's wheel printed it (relative path), in a traceback of all_reduce.
RELATIVE = (
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line '
    "2050, in all_reduce\n"
    "    work = group.allreduce([tensor], opts)\n"
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1331, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.18.1\n"
    "ncclUnhandledCudaError: Call to CUDA function failed.\n"
)
# The macro's own file named: the check failed where it is written.
OWN_FILE = RELATIVE.replace("ProcessGroupNCCL.cpp:1331", "NCCLUtils.hpp:121")


def test_the_call_is_the_path_captured_and_the_line_after_it() -> None:
    named = named_call_site(
        {"file": "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp", "line": "2181"}
    )
    assert named == CallSite(CALLER, 2181)
    assert named_call_site({"file": "..\\c10\\cuda\\CUDACachingAllocator.cpp", "line": "9"}) == (
        CallSite("c10/cuda/CUDACachingAllocator.cpp", 9)
    )


def test_values_that_name_no_source_of_torchs_are_no_call() -> None:
    assert named_call_site({"file": "model.py", "line": "12"}) is None
    assert named_call_site({"file": f"../{CALLER}", "error": "unhandled cuda error"}) is None
    assert named_call_site({"file": "csrc/moe/topk.cu", "line": "40"}) is None


def test_a_check_failing_in_its_caller_is_answered_at_the_call_and_get_reads_it(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(DATA_DIR)
    first = client.post("/api/match", json={"text": RELATIVE}).json()["matches"][0]
    assert (first["record"]["filePath"], first["record"]["lineNumber"]) == (CALLER, 1331)
    assert [other["filePath"] for other in first["sameMessage"]] == [NCCL_CHECK]
    assert "the message names the call at " + CALLER + ":1331" in first["reasons"]
    document = client.get(f"/api/errors/{first['id']}")
    assert document.status_code == 200, document.text
    record = document.json()["record"]
    assert first["record"]["reviewState"] == "draft"  # made while matching, not a curator's
    assert record["documentation"].startswith(f"Raised by the check called at `{CALLER}:1331`")
    assert f"written in `{NCCL_CHECK}`" in record["documentation"]
    assert client.get(f"/errors/{first['id']}").status_code == 200


def test_the_check_failing_where_it_is_written_keeps_its_own_record(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(DATA_DIR)
    first = client.post("/api/match", json={"text": OWN_FILE}).json()["matches"][0]
    assert first["record"]["filePath"] == NCCL_CHECK
    assert first["record"]["reviewState"] == "reviewed"
