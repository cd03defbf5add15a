"""Trigger torch's native errors on the machine at hand and keep each traceback as it was
printed: `python3 -m app.reproducers.native_capture --out DIR [--device cuda|cpu]
[--trigger NAME]... [--timeout S] [--jobs N]`.

Real pastes of CUDA errors are what errkb must answer, and the ones collected from threads
come from older releases and other GPUs. This makes them on a GPU machine from the torch it
has: each trigger is a few real torch calls a user makes (a model on the GPU fed a CPU
tensor, an index past an embedding's rows), and its output is written in the real-paste
corpus's format (tests/fixtures/real_pastes/README.md), one JSON file per trigger, with the
raising file, class and fragment the trigger declares. A GPU machine has Python and its own
torch and nothing of errkb's, so, as app/reproducers/offline.py, this module imports the
standard library only; torch is imported inside the triggers.

Each trigger runs in a fresh interpreter of its own (a device-side assert poisons the CUDA
context; `No CUDA GPUs are available` needs `CUDA_VISIBLE_DEVICES` empty before torch
starts), `--jobs` of them at a time (the one that fills the GPU alone, last), with a time
limit, stdout and stderr together as a terminal shows them (a kernel's assertion lines are
printed on stdout). A native error is then triggered once more with
`TORCH_SHOW_CPP_STACKTRACES=1`, whose "Exception raised from F at FILE:LINE" names the file
that raised it in this very build: a declared file that disagrees is reported, an unknown
one is filled from it. A trigger that raises nothing, another class, or a message without
its fragment is still written, with `captureProblem` saying so, and listed in
`summary.jsonl`; nothing is dropped. `--device cpu` runs only the triggers that raise on
CPU; `--trigger NAME` runs the triggers named, on the device given, whatever it is."""

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the working tree: app/ is one of its folders
SUMMARY = "summary.jsonl"
JOBS = 4  # triggers at a time: a GPU machine has 16 cores and minutes, not hours
TIMEOUT_S = 60  # a trigger takes seconds (filling a GPU too); a hang is cut, not waited out
TRACEBACK = "Traceback (most recent call last):"
# The source location c10::Error keeps, printed with TORCH_SHOW_CPP_STACKTRACES=1.
LOCATION = re.compile(r"Exception raised from \S+ at (\S+?):\d+")
# The build's checkout prefix (`/__w/pytorch/pytorch/`, `/pytorch/`) is dropped from it.
SOURCE_ROOT = re.compile(r"(?:^|/)((?:aten|c10|torch|caffe2|third_party)/.+)$")
CUDA_CHECK = "c10/cuda/CUDAException.cpp"  # torch's CUDA check: every `CUDA error: ...`


@dataclass(frozen=True)
class Trigger:
    """One error and how a user provokes it, with what it is expected to raise.

    `raising_file` is the file in pytorch/pytorch that raises the message (a Python file
    relative to the torch package for a Python raise), `None` when it could not be verified
    from the source; `devices` are those it raises on (a capture runs those of its device
    unless triggers are named); `env` is set before torch starts; `alone` for one that
    takes the whole GPU."""

    name: str
    run: Callable[[str], None]
    exception_class: str
    fragment: str
    raising_file: str | None
    native: bool
    devices: tuple[str, ...] = ("cuda",)
    env: tuple[tuple[str, str], ...] = ()
    alone: bool = False  # it takes the whole GPU: run after the others, by itself


# --- the triggers: each imports torch itself -------------------------------------------------


def _linear_on_cuda_fed_cpu(device: str) -> None:
    import torch

    model = torch.nn.Linear(8, 4).to(device)
    model(torch.randn(2, 8))  # the batch was never moved


def _mm_cuda_with_cpu(device: str) -> None:
    import torch

    torch.mm(torch.randn(2, 8, device=device), torch.randn(8, 4))


def _embedding_on_cuda_fed_cpu_ids(device: str) -> None:
    import torch

    embedding = torch.nn.Embedding(10, 4).to(device)
    embedding(torch.tensor([1, 2, 3]))


def _cat_cuda_with_cpu(device: str) -> None:
    import torch

    torch.cat([torch.zeros(2, 3, device=device), torch.ones(1, 3)])


def _gather_cuda_with_cpu_index(device: str) -> None:
    import torch

    scores = torch.randn(4, 5, device=device)
    torch.gather(scores, 1, torch.tensor([[0], [1], [2], [3]]))


def _add_cuda_and_cpu(device: str) -> None:
    import torch

    torch.randn(3, device=device) + torch.randn(3)


def _index_cpu_tensor_with_cuda_ids(device: str) -> None:
    import torch

    table = torch.randn(10, 4)
    table[torch.tensor([1, 2], device=device)]


def _embedding_id_out_of_range(device: str) -> None:
    import torch

    embedding = torch.nn.Embedding(10, 4).to(device)
    out = embedding(torch.tensor([3, 10], device=device))  # 10 rows: ids 0..9
    print(out.sum().item())


def _cross_entropy_target_out_of_range(device: str) -> None:
    import torch

    logits = torch.randn(4, 5, device=device)  # 5 classes
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 7, 2], device=device))
    print(loss.item())


def _tensor_on_missing_gpu(device: str) -> None:
    import torch

    torch.zeros(4, device=f"{device}:64")


def _cuda_without_visible_gpus(device: str) -> None:
    import torch

    torch.zeros(4, device=device)


def _allocator_config_typo(device: str) -> None:
    import torch

    torch.zeros(4, device=device)


def _nccl_group_fed_cpu_tensor(device: str) -> None:
    import tempfile

    import torch
    import torch.distributed as dist

    with tempfile.TemporaryDirectory() as folder:
        dist.init_process_group("nccl", init_method=f"file://{folder}/store", rank=0, world_size=1)
        loss = torch.ones(4, device=device)
        dist.all_reduce(loss.cpu())  # a CPU copy (for logging), the group has only NCCL


def _mm_half_with_bfloat16(device: str) -> None:
    import torch

    torch.mm(
        torch.randn(2, 8, device=device, dtype=torch.half),
        torch.randn(8, 4, device=device, dtype=torch.bfloat16),
    )


def _linear_bfloat16_fed_half(device: str) -> None:
    import torch

    model = torch.nn.Linear(8, 4).to(device, torch.bfloat16)
    model(torch.randn(2, 8, device=device, dtype=torch.half))


def _numpy_of_cuda_tensor(device: str) -> None:
    import torch

    torch.randn(4, device=device).numpy()


def _pin_cuda_tensor(device: str) -> None:
    import torch

    torch.randn(4, device=device).pin_memory()


def _flash_attention_in_float32(device: str) -> None:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    query = torch.randn(1, 2, 16, 8, device=device)  # flash attention takes half or bf16
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        torch.nn.functional.scaled_dot_product_attention(query, query, query)


def _index_put_half_into_float(device: str) -> None:
    import torch

    target = torch.zeros(5, device=device)
    target.index_put_((torch.tensor([0, 2], device=device),), torch.ones(2, device=device).half())


def _allocation_past_the_gpu(device: str) -> None:
    import torch

    torch.empty(1 << 50, dtype=torch.uint8, device=device)  # 1 PiB


def _conv_fed_wrong_channels(device: str) -> None:
    import torch

    conv = torch.nn.Conv2d(5, 4, 3).to(device)
    conv(torch.randn(1, 3, 8, 8, device=device))  # an RGB image into a 5-channel conv


def _cuda_in_child_after_fork(device: str) -> None:
    import multiprocessing

    import torch

    torch.zeros(1, device=device)  # the parent initialised CUDA
    child = multiprocessing.get_context("fork").Process(target=_cuda_in_child, args=(device,))
    child.start()
    child.join()
    sys.exit(child.exitcode)


def _cuda_in_child(device: str) -> None:
    import torch

    torch.zeros(1, device=device)


def _state_dict_of_other_shape(device: str) -> None:
    import torch

    saved = torch.nn.Linear(3, 4).state_dict()
    torch.nn.Linear(4, 4).to(device).load_state_dict(saved)


def _nccl_without_network_interface(device: str) -> None:
    import tempfile

    import torch
    import torch.distributed as dist

    with tempfile.TemporaryDirectory() as folder:
        dist.init_process_group("nccl", init_method=f"file://{folder}/store", rank=0, world_size=1)
        dist.all_reduce(torch.ones(4, device=device))


def _matmul_with_gpu_memory_full(device: str) -> None:
    import torch

    matrix = torch.randn(64, 64, device=device)  # made before the GPU is full; no cuBLAS yet
    held = []
    chunk = 1 << 30
    while chunk >= 1 << 20:  # fill the GPU through torch's allocator, 1 GiB down to 1 MiB
        try:
            held.append(torch.empty(chunk, dtype=torch.uint8, device=device))
        except torch.OutOfMemoryError:
            chunk //= 2
    print((matrix @ matrix).sum().item())  # the first matmul creates cuBLAS's handle


TRIGGERS: tuple[Trigger, ...] = (
    # adaption.cpp's common_device_check_failure (TORCH_CHECK "Expected all tensors to be on
    # the same device, but got ..."): aten/src/ATen/core/adaption.cpp in 2.13, whose
    # libtorch_cpu.so holds that path beside the literal (the file moved from
    # core/op_registration/ since 2.0). CUDA-only here: the GPU run's location confirms it.
    Trigger(
        "device_mismatch_addmm",
        _linear_on_cuda_fed_cpu,
        "RuntimeError",
        "Expected all tensors to be on the same device, but got mat1 is on cpu",
        "aten/src/ATen/core/adaption.cpp",
        native=True,
    ),
    Trigger(
        "device_mismatch_mm",
        _mm_cuda_with_cpu,
        "RuntimeError",
        "Expected all tensors to be on the same device, but got mat2 is on cpu",
        "aten/src/ATen/core/adaption.cpp",
        native=True,
    ),
    Trigger(
        "device_mismatch_index_select",
        _embedding_on_cuda_fed_cpu_ids,
        "RuntimeError",
        "Expected all tensors to be on the same device, but got index is on cpu",
        "aten/src/ATen/core/adaption.cpp",
        native=True,
    ),
    Trigger(
        "device_mismatch_cat",
        _cat_cuda_with_cpu,
        "RuntimeError",
        "Expected all tensors to be on the same device",
        "aten/src/ATen/core/adaption.cpp",
        native=True,
    ),
    Trigger(
        "device_mismatch_gather",
        _gather_cuda_with_cpu_index,
        "RuntimeError",
        "Expected all tensors to be on the same device, but got index is on cpu",
        "aten/src/ATen/core/adaption.cpp",
        native=True,
    ),
    # The older wording, still TensorIteratorBase's (compute_types): "but found at least two
    # devices"; aten/src/ATen/TensorIterator.cpp beside the literal in libtorch_cpu.so.
    Trigger(
        "device_mismatch_elementwise",
        _add_cuda_and_cpu,
        "RuntimeError",
        "Expected all tensors to be on the same device, but found at least two devices",
        "aten/src/ATen/TensorIterator.cpp",
        native=True,
    ),
    # check_indices_on_cpu_or_selfdevice, a plain TORCH_CHECK called by the index meta
    # function: a stored copy of aten/src/ATen/native/TensorAdvancedIndexing.cpp holds it
    # together with make_index_put_iterator, which is located in that file on CPU here.
    Trigger(
        "indices_on_other_device",
        _index_cpu_tensor_with_cuda_ids,
        "RuntimeError",
        "indices should be either on cpu or on the same device as the indexed tensor (cpu)",
        "aten/src/ATen/native/TensorAdvancedIndexing.cpp",
        native=True,
    ),
    # A kernel's assert is reported at the next CUDA call by torch's CUDA check
    # (C10_CUDA_CHECK -> c10_cuda_check_implementation in c10/cuda/CUDAException.cpp,
    # README of the real pastes); torch 2.11 raises torch.AcceleratorError for it.
    Trigger(
        "device_assert_embedding",
        _embedding_id_out_of_range,
        "torch.AcceleratorError",
        "CUDA error: device-side assert triggered",
        CUDA_CHECK,
        native=True,
    ),
    Trigger(
        "device_assert_cross_entropy",
        _cross_entropy_target_out_of_range,
        "torch.AcceleratorError",
        "CUDA error: device-side assert triggered",
        CUDA_CHECK,
        native=True,
    ),
    Trigger(
        "invalid_device_ordinal",
        _tensor_on_missing_gpu,
        "torch.AcceleratorError",
        "CUDA error: invalid device ordinal",
        CUDA_CHECK,
        native=True,
    ),
    # torch.cuda._lazy_init -> torch._C._cuda_init -> device_count_ensure_non_zero:
    # TORCH_CHECK(count, "No CUDA GPUs are available") in c10/cuda/CUDAFunctions.cpp (read in
    # pytorch/pytorch's stored copy of that file).
    Trigger(
        "no_cuda_gpus",
        _cuda_without_visible_gpus,
        "RuntimeError",
        "No CUDA GPUs are available",
        "c10/cuda/CUDAFunctions.cpp",
        native=True,
        env=(("CUDA_VISIBLE_DEVICES", ""),),
    ),
    # CUDAAllocatorConfig::parseArgs, TORCH_CHECK_VALUE (ValueError) "Unrecognized key '...'
    # in CUDA allocator config." in a stored copy of c10/cuda/CUDAAllocatorConfig.cpp of
    # the AllocatorConfig era (2.9 on); the device-independent c10/core/AllocatorConfig.cpp
    # says "in Accelerator allocator config" and lets other keys through (checked on CPU).
    Trigger(
        "allocator_config_unknown_key",
        _allocator_config_typo,
        "ValueError",
        "Unrecognized key 'expandable_segment' in CUDA allocator config",
        "c10/cuda/CUDAAllocatorConfig.cpp",
        native=True,
        env=(("PYTORCH_CUDA_ALLOC_CONF", "expandable_segment:True"),),
    ),
    # ProcessGroup::getBackend, TORCH_CHECK(false, ...) when no backend serves the device:
    # defined beside ProcessGroup's constructors in stored copies of
    # torch/csrc/distributed/c10d/ProcessGroup.cpp (old and C++17-era alike).
    Trigger(
        "no_backend_for_cpu",
        _nccl_group_fed_cpu_tensor,
        "RuntimeError",
        "No backend type associated with device type cpu",
        "torch/csrc/distributed/c10d/ProcessGroup.cpp",
        native=True,
    ),
    # CUDA's addmm checks the dtypes itself (the CPU's says "expected m1 and m2", located in
    # LinearAlgebra.cpp here): aten/src/ATen/native/cuda/Blas.cpp, as the real paste
    # torch-h038 found in its release's source; CUDA-only, the GPU run's location confirms.
    Trigger(
        "mm_dtype_mismatch",
        _mm_half_with_bfloat16,
        "RuntimeError",
        "expected mat1 and mat2 to have the same dtype, but got: c10::Half != c10::BFloat16",
        "aten/src/ATen/native/cuda/Blas.cpp",
        native=True,
    ),
    # addmm's structured meta function (TORCH_META_FUNC(addmm)): located on CPU here,
    # "Exception raised from meta at .../aten/src/ATen/native/LinearAlgebra.cpp".
    Trigger(
        "linear_dtype_mismatch",
        _linear_bfloat16_fed_half,
        "RuntimeError",
        "mat1 and mat2 must have the same dtype, but got Half and BFloat16",
        "aten/src/ATen/native/LinearAlgebra.cpp",
        native=True,
        devices=("cuda", "cpu"),
    ),
    # tensor_to_numpy: located on CPU here with a meta tensor (the same site formats the
    # device): "Exception raised from tensor_to_numpy at .../torch/csrc/utils/tensor_numpy.cpp".
    Trigger(
        "numpy_of_cuda_tensor",
        _numpy_of_cuda_tensor,
        "TypeError",
        "can't convert cuda:0 device type tensor to numpy",
        "torch/csrc/utils/tensor_numpy.cpp",
        native=True,
    ),
    # pin_memory's TORCH_CHECK, "cannot pin '...' only dense CPU tensors can be pinned": the
    # literal sits among aten/src/ATen/native/Memory.cpp's strings in libtorch_cpu.so.
    Trigger(
        "pin_cuda_tensor",
        _pin_cuda_tensor,
        "RuntimeError",
        "only dense CPU tensors can be pinned",
        "aten/src/ATen/native/Memory.cpp",
        native=True,
    ),
    # select_sdp_backend of CUDA's scaled_dot_product_attention: the real paste torch-h037
    # names aten/src/ATen/native/transformers/cuda/sdp_utils.cpp; the CPU one
    # (sdp_utils_cpp.cpp, its literal with two spaces) is not this one. The GPU run confirms.
    Trigger(
        "sdpa_no_available_kernel",
        _flash_attention_in_float32,
        "RuntimeError",
        "No available kernel",
        "aten/src/ATen/native/transformers/cuda/sdp_utils.cpp",
        native=True,
    ),
    # make_index_put_iterator: located on CPU here, "Exception raised from
    # make_index_put_iterator at .../aten/src/ATen/native/TensorAdvancedIndexing.cpp".
    Trigger(
        "index_put_dtype_mismatch",
        _index_put_half_into_float,
        "RuntimeError",
        "Index put requires the source and destination dtypes match",
        "aten/src/ATen/native/TensorAdvancedIndexing.cpp",
        native=True,
        devices=("cuda", "cpu"),
    ),
    # The caching allocator's OOM report (TORCH_CHECK_WITH(OutOfMemoryError, ...)) in
    # c10/cuda/CUDACachingAllocator.cpp, as the real pastes torch-h020..h022 found;
    # CUDA-only, the GPU run's location confirms it.
    Trigger(
        "cuda_out_of_memory",
        _allocation_past_the_gpu,
        "torch.OutOfMemoryError",
        "CUDA out of memory. Tried to allocate",
        "c10/cuda/CUDACachingAllocator.cpp",
        native=True,
    ),
    # ConvNd's check_shape_forward: located on CPU here, "Exception raised from
    # check_shape_forward at .../aten/src/ATen/native/Convolution.cpp".
    Trigger(
        "conv_channel_mismatch",
        _conv_fed_wrong_channels,
        "RuntimeError",
        "expected input[1, 3, 8, 8] to have 5 channels, but got 3 channels instead",
        "aten/src/ATen/native/Convolution.cpp",
        native=True,
        devices=("cuda", "cpu"),
    ),
    # torch.cuda._lazy_init raises it in Python: grep of the installed torch/cuda/__init__.py.
    Trigger(
        "cuda_in_forked_child",
        _cuda_in_child_after_fork,
        "RuntimeError",
        "Cannot re-initialize CUDA in forked subprocess",
        "torch/cuda/__init__.py",
        native=False,
    ),
    # Module.load_state_dict raises it in Python: grep of the installed torch/nn/modules/module.py.
    Trigger(
        "load_state_dict_size_mismatch",
        _state_dict_of_other_shape,
        "RuntimeError",
        "size mismatch for weight: copying a param with shape torch.Size([4, 3]) from checkpoint",
        "torch/nn/modules/module.py",
        native=False,
        devices=("cuda", "cpu"),
    ),
    # NCCL's bootstrap finds no interface; torch's NCCL check (a macro: the file is the
    # caller's, which the message names itself) reports it. Left to the GPU run's location.
    Trigger(
        "nccl_no_socket_interface",
        _nccl_without_network_interface,
        "torch.distributed.DistBackendError",
        "NCCL error",
        None,
        native=True,
        env=(("NCCL_SOCKET_IFNAME", "errkb-no-such-interface"),),
    ),
    # cublasCreate fails when the GPU is full (torch's workspace is allocated after it):
    # TORCH_CUDABLAS_CHECK around it in aten/src/ATen/cuda/CublasHandlePool.cpp, as the real
    # pastes torch-h035 and h050 (`when calling cublasCreate(handle)`) found. Best effort:
    # cuBLAS may find the few MiB left, or torch's workspace may fail first (an OOM).
    Trigger(
        "cublas_handle_without_memory",
        _matmul_with_gpu_memory_full,
        "RuntimeError",
        "CUBLAS_STATUS_",
        "aten/src/ATen/cuda/CublasHandlePool.cpp",
        native=True,
        alone=True,
    ),
)


# --- running them ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one run of a trigger printed and how it ended."""

    output: str
    exit_code: int | None  # None: cut at the time limit


def exception_line(output: str) -> str | None:
    """The exception line of the last traceback in the output: the first line after its
    frames that is not indented (`RuntimeError: ...`), None without a traceback."""
    lines = output.splitlines()
    starts = [index for index, line in enumerate(lines) if line.startswith(TRACEBACK)]
    if not starts:
        return None
    for line in lines[starts[-1] + 1 :]:
        if line and not line[0].isspace():
            return line
    return None


def problem(trigger: Trigger, outcome: Outcome) -> str | None:
    """Why the output is not the declared error, None when it is."""
    if outcome.exit_code is None:
        return "cut at the time limit"
    line = exception_line(outcome.output)
    if line is None:
        if outcome.exit_code == 0:
            return "raised nothing"
        return f"exited with code {outcome.exit_code} without a Python traceback"
    raised = line.split(":", 1)[0]
    if raised != trigger.exception_class:
        return f"raised {raised}, not {trigger.exception_class}: {line[:200]}"
    if trigger.fragment not in outcome.output[outcome.output.rindex(line) :]:
        return f"the message lacks the declared fragment: {line[:200]}"
    return None


def located_file(output: str) -> str | None:
    """The source file c10::Error recorded, relative to the pytorch checkout."""
    match = LOCATION.search(output)
    if match is None:
        return None
    inside = SOURCE_ROOT.search(match.group(1))
    return inside.group(1) if inside else None


def _child_command(*argv: str) -> tuple[list[str], dict[str, str]]:
    """This module in a fresh interpreter, found through PYTHONPATH (the working tree)."""
    path = os.pathsep.join(part for part in (str(ROOT), os.environ.get("PYTHONPATH")) if part)
    command = [sys.executable, "-m", "app.reproducers.native_capture", *argv]
    return command, os.environ | {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}


def run_trigger(
    trigger: Trigger, device: str, timeout: float, scratch: Path, *, locate: bool = False
) -> Outcome:
    """The trigger in a fresh interpreter, in `scratch` (never the checkout): its output as
    a terminal shows it."""
    command, env = _child_command("--run", trigger.name, device)
    env |= dict(trigger.env)
    if locate:
        env["TORCH_SHOW_CPP_STACKTRACES"] = "1"
    try:
        done = subprocess.run(
            command,
            cwd=scratch,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as cut:
        return Outcome(_text(cut.stdout), None)
    return Outcome(_text(done.stdout), done.returncode)


def _text(data: bytes | str | None) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", errors="replace")
    return data or ""


def machine(device: str, timeout: float) -> tuple[str, str]:
    """The installed torch's version and the device's name, asked of a child as well."""
    command, env = _child_command("--describe", device)
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout, check=True
    )
    version, name = done.stdout.strip().splitlines()[-1].split("\t")
    return version, name


def case(
    trigger: Trigger, outcome: Outcome, version: str, device_name: str, located: str | None
) -> dict[str, Any]:
    """The trigger's output as a real-paste case; `captureProblem` when it is not the
    declared error (or raised elsewhere than declared)."""
    found = problem(trigger, outcome)
    raising_file = trigger.raising_file
    if found is None and located is not None:
        if raising_file is None:
            raising_file = located
        elif located != raising_file:
            found = f"raised at {located}, declared {raising_file}"
    written: dict[str, Any] = {
        "source": f"errkb-capture:{trigger.name}@{version}/{device_name}",
        "project": "torch",
        "wrapper": None,
        "shape": "full-traceback",
        "exceptionClass": trigger.exception_class,
        "messageFragment": trigger.fragment,
        "raisingFile": raising_file,
        "release": f"torch=={version}",
        "thirdParty": False,
    }
    if trigger.native:
        written["raisedInNative"] = True
    written["paste"] = outcome.output
    if found is not None:
        written["captureProblem"] = found
    return written


def capture_one(
    trigger: Trigger, out: Path, device: str, timeout: float, machine_at: tuple[str, str]
) -> dict[str, Any]:
    """Run one trigger (twice for a native error: its location), write its case into `out`;
    its line of the summary."""
    number = TRIGGERS.index(trigger) + 1  # the same name whatever the selection
    outcome = run_trigger(trigger, device, timeout, out)
    located = None
    if trigger.native and problem(trigger, outcome) is None:
        located = located_file(run_trigger(trigger, device, timeout, out, locate=True).output)
    written = case(trigger, outcome, *machine_at, located)
    name = f"torch-g{number:02d}-{trigger.name.replace('_', '-')}.json"
    (out / name).write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    status = written.get("captureProblem") or f"ok ({written['raisingFile']})"
    print(f"{trigger.name}: {status}", file=sys.stderr, flush=True)
    return {
        "trigger": trigger.name,
        "file": name,
        "device": device,
        "raisingFile": written["raisingFile"],
        "located": located,
        "captureProblem": written.get("captureProblem"),
    }


def capture(
    triggers: list[Trigger], out: Path, device: str, timeout: float, jobs: int = JOBS
) -> list[dict[str, Any]]:
    """Run the triggers, `jobs` at a time (each is a process of its own; a device machine's
    time is short), those that take the whole GPU after the others, alone; write their cases
    into `out` and the summary beside them, in the triggers' order."""
    out.mkdir(parents=True, exist_ok=True)
    machine_at = machine(device, timeout)

    def one(trigger: Trigger) -> dict[str, Any]:
        return capture_one(trigger, out, device, timeout, machine_at)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        lines = list(pool.map(one, [trigger for trigger in triggers if not trigger.alone]))
    lines += [one(trigger) for trigger in triggers if trigger.alone]
    order = [trigger.name for trigger in triggers]
    summary = sorted(lines, key=lambda line: order.index(line["trigger"]))
    text = "".join(json.dumps(line) + "\n" for line in summary)
    (out / SUMMARY).write_text(text, encoding="utf-8")
    return summary


def _child(argv: list[str]) -> int:
    """In the child: run one trigger (`--run NAME DEVICE`) or describe the machine."""
    if argv[0] == "--describe":
        import torch

        cuda = argv[1] == "cuda" and torch.cuda.is_available()
        name = torch.cuda.get_device_name(0) if cuda else "cpu"
        print(f"{torch.__version__}\t{name}")
        return 0
    by_name = {trigger.name: trigger for trigger in TRIGGERS}
    by_name[argv[1]].run(argv[2])
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("--run", "--describe"):
        return _child(argv)
    parser = argparse.ArgumentParser(prog="python3 -m app.reproducers.native_capture")
    parser.add_argument("--out", type=Path, required=True, help="folder for the cases")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--trigger", action="append", choices=[t.name for t in TRIGGERS])
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="seconds per trigger")
    parser.add_argument("--jobs", type=int, default=JOBS, help="triggers run at a time")
    options = parser.parse_args(argv)
    if options.trigger:
        chosen = [t for t in TRIGGERS if t.name in options.trigger]
    else:
        chosen = [t for t in TRIGGERS if options.device in t.devices]
    summary = capture(chosen, options.out, options.device, options.timeout, options.jobs)
    problems = [line for line in summary if line["captureProblem"]]
    print(f"{len(summary) - len(problems)} of {len(summary)} captured", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
