"""reproducers/: each script run for real, in its own subprocess, against the upstream release.

No upstream class is mocked: a pass here means the released vLLM/SGLang code raised the
record's error in the trigger scenario and stayed sound under the record's fix.
"""

import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import re2

from app.config import PROJECT_ROOT
from app.matching.index import MAX_SUBJECT_CHARS
from app.records.model import parse_record
from app.reproducers.harness import EXIT_CODES, check_error
from tests.helpers import real_errors
from tests.helpers.records import make_record

pytestmark = pytest.mark.network  # downloads from the package index

REPRODUCERS = PROJECT_ROOT / "reproducers"
RECORDS = PROJECT_ROOT / "data" / "records"
CPU_IDS = ["c53f6de81577a6bc", "b6bab2e17ae18394"]
# torch's records: their reproducers run the installed torch the reproducers extra pins
TORCH_IDS = [
    "e778062eb5812858",
    "540081589474d830",
    "54f572eb27be7a91",
    "ae806459feb15e4f",
    "cb43aea2096bc452",
    "eb844c2a707cc307",
    "fe4700c7444d4d8a",
    "7a726485251147db",
    "397e41bb37848de3",
    "c14fef0d76688b85",
    "8ce26c639f5fd745",
    "9909708c9dacbe4f",  # backend=... raised: (BackendCompilerFailed)
]
# torch's records raised in C++: no Python frame of torch raises them, so their
# traceback ends in the Python call that entered the operator (torch's or the caller's own)
NATIVE_IDS = [
    "0d2fcf1f986dbc4b",  # backward through the graph a second time
    "c40953a03dd3c081",  # element 0 of tensors does not require grad
    "7cdaa17d9584324f",  # mat1 and mat2 shapes cannot be multiplied
    "08c77396aae53af9",  # mat1 and mat2 must have the same dtype
    "7222a58d60df4fae",  # modified by an inplace operation
    "15f63fcf1b6cd286",  # index out of range in self
    "c708be9e2bb6cbbd",  # DDP: expected to have finished reduction
    "ee88ccd366d16980",  # convolution: expected input to have 3 channels
    "5b688ef5d51e8fb6",  # the size of tensor a must match the size of tensor b
    "a52aaca74f5932ff",  # expected input batch_size to match target batch_size
    "bc8c5743af9181cd",  # view size is not compatible with input tensor's size and stride
    "57f869650cacc195",  # can't call numpy() on Tensor that requires grad
    "fe9d4d18f415dbd5",  # a leaf Variable that requires grad is used in an in-place operation
    "29af13955d4274c0",  # expected scalar type Float but found Double
    "aab1d00bc9250161",  # expected m1 and m2 to have the same dtype
    "2fcab530d24e91b4",  # index put requires the source and destination dtypes match
    "bcf47b7bd9d7b7eb",  # can't convert meta device type tensor to numpy
    "e8a85d0a015b0143",  # cannot pin 'MetaFloatType' only dense CPU tensors can be pinned
]
# vLLM's checks of configuration, requests, memory and the engine client: their modules import
# the release's CPU requirements (the cached environment), some of them with names stubbed.
VLLM_CPU_IDS = [
    "1eb47c1f07dd3282",
    "2e818bedc5891ef6",
    "274b6d05e5463e96",
    "b6ab34616f9b786c",
    "4491f40c75cd9d31",
    "3fefc93fec466bb3",
    "ed7295e6c6ddb9a3",
    "a830e3eedb3d8df7",
    "3216de0ca6c13343",
    "d818e66545a62421",
    "cf26e40ccb5be579",
    "088e0124f73a51fd",
    "e6e17ac243026f5a",
    "9f776f0c73e4b7ca",
    "631d0b2ae7806e42",
    "702dd7498deb52fd",
    "c37c5b9c078ab2ce",
    "563581060cacef04",
    "49d42652cd8e709b",
]
# SGLang's checks that run on CPU: the module's other imports stubbed, and the names it calls
# from modules that import triton (absent on CPU) stood in, as each script says.
SGLANG_CPU_IDS = ["c9c508eec98b77e3", "220aadf8325454c6", "6c6f3a9552fa39a0", "d26a54b65707d46a"]
BF16_ID = "174e3825035699b3"  # raised only on a GPU below compute capability 8.0
CUDA_ID = "edc4df790b100979"
TORCH_CUDA_ID = "f95fc6ac2ef0baeb"  # torch raises it only where CUDA is
TORCH_NATIVE_CUDA_IDS = [
    "e969721df7a93b42",  # same device
    "7bfe411d3d58a9c0",  # CUDA out of memory. Tried to allocate
    "7087d0ce19a5cdec",  # device-side assert
    "a85e5b91e9b80a8c",  # illegal memory access
    "b22406073e272564",  # no kernel image (skipped on a GPU the wheel supports)
    "f59af6fbbd5560a7",  # invalid device ordinal
    "46f11eab1f9dd68b",  # no CUDA GPUs are available
    "679e1f4b2c709de8",  # SDPA: no available kernel
    "7d8c50f63b888856",  # indices on another device
    "ffb8e23a4a4cdb41",  # operation not permitted when stream is capturing
    "7921f04022ee6caf",  # NCCL watchdog timeout
    "ccbb13bfece44d3a",  # CUDA error: out of memory
    "c242f9ee2933e5bb",  # found no NVIDIA driver (a stand-in libcuda without its functions)
    "08fb511a8bb549e2",  # the NVIDIA driver is too old (a stand-in libcuda reporting CUDA 9.0)
    "9c21dca825782b21",  # cuBLAS: cublasCreate(handle) on a full GPU
    "ba464de49ccc4516",  # cuBLAS: a product after an out-of-range embedding lookup
    "58588cf5c295bbff",  # NCCL error in: ... (two ranks on one GPU: invalid usage)
    "0e3bc22a5ce53920",  # misaligned address
    "2f12f6c9b6d1c025",  # unspecified launch failure (a jiterator kernel that traps)
]
PROFILING_ID = "d6814a5cbefc4741"  # vLLM measures the GPU's free memory: only CUDA raises it
PROTOCOL_KEYS = {
    "id",
    "target",
    "device",
    "stubbed",
    "python",
    "torch",
    "trigger",
    "fix",
    "status",
    "reason",
}
TIMEOUT_S = 300


def record(record_id: str) -> dict:
    return json.loads((RECORDS / f"{record_id}.json").read_text(encoding="utf-8"))


def run(script: str, *args: str, **env: str) -> tuple[int, dict]:
    """Exit code and result (the last stdout line) of one reproducer run as a plain script."""
    done = subprocess.run(
        [sys.executable, str(REPRODUCERS / script), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=PROJECT_ROOT,
        env={**os.environ, **env},
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])


@cache
def cpu_run(record_id: str) -> tuple[int, dict]:
    """Each CPU reproducer runs once for all the tests that read its result."""
    return run(f"{record_id}.py")


@cache
def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def assert_raised_the_record(record_id: str, check: dict) -> None:
    expected = record(record_id)
    assert check["status"] == "passed", check
    assert check["errorClass"] == expected["errorClass"].rsplit(".", 1)[-1]
    assert re2.fullmatch(expected["messagePattern"], check["message"])
    if record_id in NATIVE_IDS:  # the C++ file is in no frame: the exception line ends it
        assert check["traceback"].rstrip().endswith(check["message"])
    else:
        assert expected["filePath"].split("/", 1)[1] in check["traceback"]  # raised upstream


def test_every_record_has_a_reproducer() -> None:
    records = {path.stem for path in RECORDS.glob("*.json")}
    assert records <= {path.stem for path in REPRODUCERS.glob("*.py")}


@pytest.mark.parametrize("record_id", CPU_IDS)
def test_cpu_reproducer_passes(record_id: str) -> None:
    code, result = cpu_run(record_id)
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert result.keys() >= PROTOCOL_KEYS
    assert (result["id"], result["device"], result["stubbed"]) == (record_id, "cpu", [])
    assert result["target"]["package"] == "vllm"
    assert result["target"]["version"] == "0.33.0"
    assert result["torch"]
    assert_raised_the_record(record_id, result["trigger"])
    assert result["fix"]["status"] == "passed", result["fix"]


@pytest.mark.parametrize("record_id", TORCH_IDS + NATIVE_IDS)
def test_torch_reproducer_passes_on_the_pinned_torch(record_id: str) -> None:
    code, result = cpu_run(record_id)
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert result.keys() >= PROTOCOL_KEYS
    assert (result["id"], result["device"], result["stubbed"]) == (record_id, "cpu", [])
    assert (result["target"]["package"], result["target"]["version"]) == ("torch", "2.13.0")
    assert result["torch"].startswith("2.13.0")
    assert_raised_the_record(record_id, result["trigger"])
    for check in result["extra"].values():
        assert_raised_the_record(record_id, check)
    assert result["fix"]["status"] == "passed", result["fix"]


@pytest.mark.parametrize("record_id", VLLM_CPU_IDS)
def test_vllm_reproducer_passes_on_the_release(record_id: str) -> None:
    code, result = cpu_run(record_id)
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert (result["id"], result["device"]) == (record_id, "cpu")
    assert (result["target"]["package"], result["target"]["version"]) == ("vllm", "0.33.0")
    assert_raised_the_record(record_id, result["trigger"])
    for check in result["extra"].values():
        assert_raised_the_record(record_id, check)
    assert result["fix"]["status"] == "passed", result["fix"]


@pytest.mark.parametrize("record_id", SGLANG_CPU_IDS)
def test_sglang_reproducer_passes_on_the_release(record_id: str) -> None:
    code, result = cpu_run(record_id)
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert (result["id"], result["device"]) == (record_id, "cpu")
    assert (result["target"]["package"], result["target"]["version"]) == ("sglang", "0.5.23")
    assert_raised_the_record(record_id, result["trigger"])
    for check in result["extra"].values():
        assert_raised_the_record(record_id, check)
    assert result["fix"]["status"] == "passed", result["fix"]


def test_architectures_message_longer_than_the_matcher_reads_is_the_record() -> None:
    """vLLM lists every supported architecture: the message outgrows what the index reads."""
    _, result = cpu_run("a830e3eedb3d8df7")
    assert result["trigger"]["status"] == "passed", result["trigger"]
    assert len(result["trigger"]["message"]) > MAX_SUBJECT_CHARS
    assert result["trigger"]["message"].startswith("Model architectures ['TTLlamaForCausalLM']")


def test_bfloat16_reproducer_is_skipped_where_bfloat16_runs() -> None:
    code, result = run(f"{BF16_ID}.py")
    if result["status"] == "passed":
        pytest.skip("a GPU below compute capability 8.0 raised it: the reproducer passed")
    assert (code, result["status"]) == (EXIT_CODES["skipped"], "skipped"), result
    assert (result["trigger"], result["fix"]) == (None, None)
    assert "needs a CUDA device" in result["reason"] or "supports bfloat16" in result["reason"]


def test_optimizer_fix_trains_every_weight_and_each_way_to_empty_raises() -> None:
    _, result = cpu_run("e778062eb5812858")
    assert result["fix"]["state"] == {"param_groups": 1, "params": 4, "changed": 4}
    assert sorted(result["extra"]) == ["all_frozen", "consumed_generator"]


def test_state_dict_fix_loads_every_key_and_each_mismatch_raises() -> None:
    _, result = cpu_run("540081589474d830")
    state = result["fix"]["state"]
    assert (state["missing"], state["unexpected"], len(state["loaded_keys"])) == (0, 0, 4)
    extra = result["extra"]
    assert '"module.fc.weight"' in result["trigger"]["message"]
    assert (
        'Unexpected key(s) in state_dict: "state_dict", "epoch"'
        in (extra["whole_checkpoint"]["message"])
    )
    assert "size mismatch for fc.weight" in extra["other_head"]["message"]


def test_cpu_build_fix_runs_the_model_on_the_cpu() -> None:
    _, result = cpu_run("54f572eb27be7a91")
    assert result["fix"]["state"] == {"device": "cpu", "cuda_build": None, "output": [3, 2]}


def test_map_location_fix_loads_the_gpu_checkpoint_on_the_cpu() -> None:
    _, result = cpu_run("ae806459feb15e4f")
    state = result["fix"]["state"]
    assert (state["recorded_location"], state["loaded_on"]) == ("cuda:0", ["cpu"])


def test_process_group_fix_answers_as_a_group_of_one() -> None:
    _, result = cpu_run("cb43aea2096bc452")
    state = result["fix"]["state"]
    assert (state["world_size"], state["rank"], state["all_reduce"]) == (1, 0, 3.0)
    assert sorted(result["extra"]) == ["barrier", "sampler"]


def test_guarded_script_fix_reads_every_batch_through_spawned_workers() -> None:
    _, result = cpu_run("b4c6f8367947604b")
    assert result["fix"]["status"] == "passed", result["fix"]
    assert result["fix"]["state"] == {"context": "spawn", "num_workers": 1, "total": 140}
    assert "exited unexpectedly" in result["extra"]["worker_killed"]["message"]


def test_lora_rank_reproducer_passes_with_only_the_config_stubbed() -> None:
    record_id = "b8498370b74baa60"
    code, result = cpu_run(record_id)
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert (result["target"]["package"], result["target"]["version"]) == ("vllm", "0.33.0")
    assert result["stubbed"] == ["vllm.config.lora:LoRAConfig"]
    assert_raised_the_record(record_id, result["trigger"])
    assert_raised_the_record(record_id, result["extra"]["rank_pattern"])
    assert (
        "LoRA rank 64 is greater than max_lora_rank 16."
        in result["extra"]["rank_pattern"]["message"]
    )
    assert result["fix"]["state"] == {"adapter_rank": 32, "max_lora_rank": 32, "scaling": 0.5}


def test_rendezvous_names_the_first_missing_variable_and_the_launcher_set_fixes_it() -> None:
    _, result = cpu_run("be86eef068c68cc6")
    assert result["trigger"]["captures"] == {"env_var": "RANK"}
    assert result["extra"]["no_master"]["captures"] == {"env_var": "MASTER_ADDR"}
    assert result["fix"]["state"] == {"init_method": "env://", "world_size": 1, "rank": 0}


def test_rpc_fix_gets_the_remote_result_back() -> None:
    _, result = cpu_run("13b7b8ef9a21ba45")
    assert result["fix"]["state"] == {"worker": "worker0", "result": 2.0}


def test_hf3fs_fix_returns_every_buffer_and_two_pools_trigger_too() -> None:
    _, result = cpu_run("c53f6de81577a6bc")
    assert result["fix"]["state"] == {"inuse_count": 0, "free_buffers": 4}
    assert_raised_the_record("c53f6de81577a6bc", result["extra"]["two_pools"])


def test_shm_fix_reclaims_space_and_no_segment_is_left() -> None:
    _, result = cpu_run("b6bab2e17ae18394")
    state = result["fix"]["state"]
    assert state["occupied_bytes_before"] == state["data_buffer_size"]
    assert state["occupied_bytes_after_free"] < state["occupied_bytes_before"]
    assert state["freed_keys"]
    assert state["monotonic_id_start"] == len(state["freed_keys"])
    assert_raised_the_record("b6bab2e17ae18394", result["extra"]["reader_killed"])
    assert not list(Path("/dev/shm").glob("errkb-b6bab2e17ae18394-*"))


def test_cuda_reproducer_is_skipped_without_cuda() -> None:
    if cuda_available():
        pytest.skip("CUDA is available: test_cuda_reproducer_passes covers this machine")
    code, result = run(f"{CUDA_ID}.py")
    assert (code, result["status"]) == (EXIT_CODES["skipped"], "skipped"), result
    assert "CUDA" in result["reason"]
    assert result["device"] == "cuda"
    assert result["trigger"] is None
    assert result["fix"] is None
    assert result["target"]["classes"] == ["CudaVmmMemoryPool", "CudaVmmTensorTransportProxy"]
    assert "sglang.srt.managers.schedule_batch:MultimodalDataItem" in result["stubbed"]
    assert "sglang.srt.runtime_context:get_parallel" in result["stubbed"]


def test_forked_cuda_reproducer_is_skipped_without_cuda() -> None:
    if cuda_available():
        pytest.skip("CUDA is available: test_forked_cuda_reproducer_passes covers this machine")
    code, result = run(f"{TORCH_CUDA_ID}.py")
    assert (code, result["status"]) == (EXIT_CODES["skipped"], "skipped"), result
    assert (result["device"], result["trigger"], result["fix"]) == ("cuda", None, None)
    assert (result["target"]["package"], result["target"]["version"]) == ("torch", "2.13.0")


def test_native_records_name_their_cpp_file_and_no_line() -> None:
    for record_id in NATIVE_IDS + TORCH_NATIVE_CUDA_IDS:
        native = record(record_id)
        assert native["filePath"].endswith((".cpp", ".h", ".hpp")), (
            record_id
        )  # inline or macro: a header
        assert (native["lineNumber"], native["sourceCode"]) == (None, None), record_id
        assert native["githubUrl"].endswith(native["filePath"]), record_id
        assert "line in v2.13.0 is not pinned" in native["documentation"], record_id


def test_memory_profiling_reproducer_is_skipped_without_cuda() -> None:
    if cuda_available():
        pytest.skip("CUDA is available: test_memory_profiling_reproducer_passes covers it")
    code, result = run(f"{PROFILING_ID}.py")
    assert (code, result["status"]) == (EXIT_CODES["skipped"], "skipped"), result
    assert (result["device"], result["trigger"], result["fix"]) == ("cuda", None, None)
    assert result["target"]["module"] == "vllm.v1.worker.gpu_worker"
    assert "needs a CUDA device" in result["reason"]


@pytest.mark.parametrize("record_id", TORCH_NATIVE_CUDA_IDS)
def test_native_cuda_reproducer_is_skipped_without_cuda(record_id: str) -> None:
    if cuda_available():
        pytest.skip("CUDA is available: the GPU runner's errkb verify covers this machine")
    code, result = run(f"{record_id}.py")
    assert (code, result["status"]) == (EXIT_CODES["skipped"], "skipped"), result
    assert (result["device"], result["trigger"], result["fix"]) == ("cuda", None, None)
    assert (result["target"]["package"], result["target"]["version"]) == ("torch", "2.13.0")


def test_weights_only_fix_allowlists_the_one_class_and_each_refusal_raises() -> None:
    _, result = cpu_run("eb844c2a707cc307")
    assert result["fix"]["state"]["allowlisted"] == ["TrainConfig"]
    assert "Unsupported global: GLOBAL __main__.TrainConfig" in result["trigger"]["message"]
    assert sorted(result["extra"]) == ["numpy_scalar", "whole_model"]


def test_spawned_and_launched_failures_report_the_failing_rank() -> None:
    _, raised = cpu_run("7a726485251147db")
    assert "-- Process 2 terminated with the following error:" in raised["trigger"]["message"]
    assert "IndexError: list index out of range" in raised["trigger"]["message"]
    _, killed = cpu_run("397e41bb37848de3")
    assert killed["trigger"]["captures"]["name"] == "SIGKILL"
    assert "terminated with signal SIGABRT" in killed["extra"]["abort"]["message"]
    _, launched = cpu_run("c14fef0d76688b85")
    assert "old_style_train FAILED" in launched["trigger"]["message"]
    assert "exitcode  : 2" in launched["trigger"]["message"]  # argparse's exit
    assert launched["fix"]["state"]["returned"] == {"0": 0, "1": 1}


def test_a_torch_reproducer_runs_on_the_installed_torch_only_when_asked(tmp_path: Path) -> None:
    """A GPU machine's torch is what it is: `--torch installed` runs a reproducer written for
    another release on it, and the result names both; the pin stays the default."""
    script = (REPRODUCERS / f"{TORCH_IDS[0]}.py").read_text(encoding="utf-8")
    assert 'version="2.13.0"' in script
    other = tmp_path / f"{TORCH_IDS[0]}.py"
    other.write_text(script.replace('version="2.13.0"', 'version="2.12.0"'), encoding="utf-8")

    def result(*args: str) -> tuple[int, dict]:
        done = subprocess.run(
            [sys.executable, str(other), *args],
            capture_output=True,
            text=True,
            cwd=PROJECT_ROOT,
            check=False,
        )
        return done.returncode, json.loads(done.stdout.strip().splitlines()[-1])

    code, refused = result()
    assert (code, refused["status"]) == (EXIT_CODES["error"], "error")
    assert "is installed, but the reproducer pins 2.12.0" in refused["reason"]
    code, ran = result("--torch", "installed")
    assert (code, ran["status"]) == (EXIT_CODES["passed"], "passed"), ran
    assert ran["target"]["version"] == "2.13.0"
    assert ran["target"]["pinned"] == "2.12.0"
    assert ran["torch"].startswith("2.13.0")
    assert ran["machine"]["kind"] == "cpu"
    assert ran["machine"]["cores"] >= 1


# What torch 2.11.0+cu130 printed on an NVIDIA H200 for the model on CUDA and the batch on
# the CPU (the first GPU run of e969721df7a93b42, 2026-12-04).
DEVICE_MISMATCH_ON_A_GPU = (
    "Expected all tensors to be on the same device, but got mat1 is on cpu, different from "
    "other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)"
)


def _library_strings(path: Path) -> str:
    """The printable runs of a compiled library, as `strings` lists them."""
    return "\n".join(
        run.decode("ascii") for run in re.findall(rb"[\x20-\x7e]{6,}", path.read_bytes())
    )


def test_the_device_mismatch_record_matches_every_wording_of_the_installed_torch() -> None:
    """Each wording the installed torch's library holds, rebuilt from its own literals with
    values between them, and the wording a GPU printed, are the record's message."""
    import torch

    library = _library_strings(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so")
    prefix = "Expected all tensors to be on the same device"
    wordings = sorted({line for line in library.splitlines() if line.startswith(prefix)})
    assert len(wordings) >= 3, wordings
    pieces = {
        "Expected all tensors to be on the same device, but found at least two devices, ": (
            "cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_addmm)"
        ),
        "Expected all tensors to be on the same device, but got ": (
            "index is on cpu, different from other tensors on cuda:0 (when checking argument "
            "in method wrapper_CUDA__index_select)"
        ),
    }
    assert ", different from other tensors on " in library
    assert " (when checking argument in method " in library
    pattern = re2.compile(record("e969721df7a93b42")["messagePattern"])
    for wording in wordings:
        message = wording + pieces.get(wording, "cuda:0")
        assert pattern.fullmatch(message), message
    assert pattern.fullmatch(DEVICE_MISMATCH_ON_A_GPU)
    assert not pattern.fullmatch(prefix + ".")


def test_device_bundle_stands_in_for_the_download(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    code, made = run(f"{CUDA_ID}.py", "--bundle", str(bundle))
    assert code == 0
    assert made["files"] > 0
    code, result = run(f"{CUDA_ID}.py", ERRKB_CACHE_DIR=str(bundle))
    assert result["status"] in ("skipped", "passed"), result
    assert not (bundle / "wheels").exists()


def test_release_that_cannot_be_downloaded_is_an_error(tmp_path: Path) -> None:
    code = """if True:
        import sys
        from app.reproducers.harness import Target, main
        target = Target("vllm", "0.0.0.404", "vllm.logger", ("Logger",))
        sys.exit(main("c53f6de81577a6bc", target, ("cpu",), lambda m, d: None,
                      lambda m, d: {}, argv=[]))
    """
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=PROJECT_ROOT,
        env={**os.environ, "ERRKB_CACHE_DIR": str(tmp_path)},
        check=False,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (done.returncode, result["status"]) == (EXIT_CODES["error"], "error")
    assert "No matching distribution found for vllm==0.0.0.404" in result["reason"]
    assert result["trigger"] is None


@pytest.mark.gpu
def test_cuda_reproducer_passes() -> None:
    code, result = run(f"{CUDA_ID}.py")
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert result["device"] == "cuda"
    assert_raised_the_record(CUDA_ID, result["trigger"])
    state = result["fix"]["state"]
    assert state["occupied_chunks"] == 0
    assert state["available_chunks"] == [[0, state["allocation_size"]]]


@pytest.mark.gpu
def test_forked_cuda_reproducer_passes() -> None:
    code, result = run(f"{TORCH_CUDA_ID}.py")
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert_raised_the_record(TORCH_CUDA_ID, result["trigger"])
    assert result["fix"]["state"] == {"context": "spawn", "results": [2.0, 4.0, 6.0]}


@pytest.mark.gpu
def test_memory_profiling_reproducer_passes() -> None:
    code, result = run(f"{PROFILING_ID}.py")
    assert (code, result["status"]) == (EXIT_CODES["passed"], "passed"), result
    assert_raised_the_record(PROFILING_ID, result["trigger"])
    assert result["fix"]["state"]["kv_cache_bytes"] > 0


@pytest.mark.gpu
def test_hf3fs_reproducer_passes_on_cuda() -> None:
    code, result = run("c53f6de81577a6bc.py", "--device", "cuda")
    assert (code, result["status"], result["device"]) == (0, "passed", "cuda"), result


def _below_package_or_checkout(path: str) -> str:
    """A frame's file from its package's folder, or from the checkout that ran it: a
    recording made in another clone names the same files under another root."""
    if unpacked := re.match(r".*/unpacked/[^/]+/(.*)", path):
        return unpacked[1]
    for folder in ("app", "reproducers"):
        _, found, below = path.partition(f"/{folder}/")
        if found and (PROJECT_ROOT / folder / below).is_file():
            return f"{folder}/{below}"
    return path


def _shape(traceback_text: str) -> list[str]:
    """A traceback's frames (file below its package or checkout, line, function) and
    exception lines: what a recording keeps whatever machine made it. The harness's own frame
    (app/) keeps no line: an edit of the harness moves it, not what the release raises."""
    shape = []
    for line in traceback_text.splitlines():
        if frame := re.match(r'\s*File "(.*)", line (\d+), in (\S+)', line):
            path = _below_package_or_checkout(frame[1])
            line_number = "" if path.startswith("app/") else f":{frame[2]}"
            shape.append(f"{path}{line_number} {frame[3]}")
        elif line and not line[0].isspace():
            shape.append(line)
    return shape


@pytest.mark.parametrize("record_id", ["c53f6de81577a6bc", "b6bab2e17ae18394"])
def test_recorded_reproducer_tracebacks_are_what_the_release_raises(record_id: str) -> None:
    """The matching tests run offline on recorded tracebacks; the release must still raise
    them, frame for frame."""
    live = real_errors.live_reproducer_traceback(record_id)
    assert _shape(real_errors.reproducer_traceback(record_id)) == _shape(live)


@pytest.mark.parametrize("offset", real_errors.RECORDED_SGLANG_OFFSETS)
def test_recorded_sglang_tracebacks_are_what_the_release_raises(offset: int) -> None:
    live = real_errors.live_sglang_cancel_traceback(offset)
    assert _shape(real_errors.sglang_cancel_traceback(offset)) == _shape(live)


def test_a_record_without_text_found_by_its_site_is_judged_on_a_message_of_several_lines() -> None:
    """A record whose message is one value (`raise InternalError(assert_msg)`) has no pattern
    the matcher takes; when its site raises another class with a message of several lines,
    the run says so (before, judging that message again raised KeyError)."""
    internal = pytest.importorskip("torch._export.error")
    fields = {
        "messagePattern": "(?P<assert_msg>(?s:.+?))",
        "errorClass": "ValueError",
        "repo": "pytorch/pytorch",
        "filePath": "torch/_export/error.py",
        "lineNumber": 33,
    }
    record = parse_record(json.dumps(make_record(0xE1, "{assert_msg}", **fields)))
    with pytest.raises(internal.InternalError) as raised:
        internal.internal_assert(False, "first line\nsecond line")
    result = check_error(record, raised.value)
    assert result["status"] == "failed"
    assert result["detail"] == "raised InternalError, the record says ValueError"
