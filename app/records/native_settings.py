"""The settings that bear on errors raised in native code (CUDA, NCCL, the caching allocator).

Harvest explains a Python raise site from the settings its guard and message read. A C++ or
CUDA site has no harvested explanation, yet the same few environment variables and flags
decide most of what a user can do about it: `CUDA_LAUNCH_BLOCKING` to find the kernel that
failed, `PYTORCH_CUDA_ALLOC_CONF` for fragmentation, `NCCL_DEBUG` for a collective that
hangs, vLLM's `--enforce-eager` and SGLang's CUDA-graph switch to take graph capture out.
Each is listed with where its release names it (the file and line at the release's tag: the
message tail that prints it, the code that reads it, the flag's definition), so a record page
shows only what a release says, and a setting applies to a record by the words of its
message or its tags.
"""

import re
from dataclasses import dataclass

from app.records.model import ErrorRecord
from app.wire.explanation import ExplainedSetting, Explanation, ExplanationSource

MAX_SETTINGS = 6
NATIVE_SUFFIXES = (".cpp", ".cc", ".cu", ".cuh", ".h", ".hpp")
_COMPILED_LIBRARY = re.compile(r"\.(?:so(?:\.[0-9]+)*|dylib|pyd|dll)$")
_REPOS = {
    "torch": ("pytorch/pytorch", "v2.13.0", "torch==2.13.0", ""),
    "vllm": ("vllm-project/vllm", "v0.33.0", "vllm==0.33.0", ""),
    "sglang": ("sgl-project/sglang", "v0.5.23", "sglang==0.5.23", "python/"),
}


@dataclass(frozen=True, slots=True)
class NativeSetting:
    """One setting, where its release names it, and the records it bears on."""

    name: str
    kind: str  # env | flag | parameter
    typed_as: str
    default: str | None
    help: str
    project: str  # a key of _REPOS
    file_path: str  # inside the project's package, as released
    line_number: int | None  # None: a C++ file, which the wheel does not ship
    via: str  # message (the record's own text names it) | release (its code or docs do)
    applies: re.Pattern[str]  # searched in the record's message and tags


_CUDA_ERROR = re.compile(r"^CUDA error: |device-side assert")
_DEVICE_SIDE = re.compile(r"device-side assert")
_MEMORY = re.compile(r"out of memory|\boom\b", re.IGNORECASE)
_DEVICES = re.compile(r"device ordinal|No CUDA GPUs|Invalid device id")
_NCCL = re.compile(r"NCCL|Watchdog|\bnccl\b")
_GRAPHS = re.compile(r"stream is capturing|cuda-graph|illegal memory access")
_ILLEGAL = re.compile(r"illegal memory access")

SETTINGS = (
    NativeSetting(
        "CUDA_LAUNCH_BLOCKING",
        "env",
        "CUDA_LAUNCH_BLOCKING=1",
        "0",
        "Makes every kernel launch wait for the kernel to finish, so the traceback stops at the "
        "kernel that failed instead of a later call (slow: for debugging only).",
        "torch",
        "c10/cuda/CUDAMiscFunctions.cpp",
        None,
        "message",
        _CUDA_ERROR,
    ),
    NativeSetting(
        "TORCH_USE_CUDA_DSA",
        "env",
        "TORCH_USE_CUDA_DSA=1 (when building torch)",
        None,
        "A build option, not a run-time one: a torch compiled with it records which kernel "
        "assertion failed, in which block and thread, and reports it with the CUDA error.",
        "torch",
        "c10/cuda/CUDADeviceAssertionHost.cpp",
        None,
        "message",
        _DEVICE_SIDE,
    ),
    NativeSetting(
        "PYTORCH_CUDA_ALLOC_CONF",
        "env",
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
        None,
        "Options of the CUDA caching allocator; `expandable_segments:True` lets reserved but "
        "unallocated memory be reused (fragmentation), `max_split_size_mb` limits block splitting.",
        "torch",
        "torch/utils/collect_env.py",
        664,
        "release",
        _MEMORY,
    ),
    NativeSetting(
        "CUDA_VISIBLE_DEVICES",
        "env",
        "CUDA_VISIBLE_DEVICES",
        None,
        "The GPUs a process sees, renumbered from 0: `CUDA_VISIBLE_DEVICES=1` makes the second "
        "GPU `cuda:0`; empty hides them all.",
        "torch",
        "torch/cuda/__init__.py",
        681,
        "release",
        _DEVICES,
    ),
    NativeSetting(
        "NCCL_DEBUG",
        "env",
        "NCCL_DEBUG=INFO",
        None,
        "NCCL's log level: INFO prints the transport, topology and the failing call of each rank.",
        "torch",
        "torch/nn/parallel/distributed.py",
        316,
        "release",
        _NCCL,
    ),
    NativeSetting(
        "NCCL_P2P_DISABLE",
        "env",
        "NCCL_P2P_DISABLE=1",
        None,
        "Turns off direct GPU-to-GPU (P2P/NVLink) transfers: the test for a broken P2P path or "
        "an IOMMU/ACS setting that hangs collectives.",
        "torch",
        "torch/nn/parallel/distributed.py",
        320,
        "release",
        _NCCL,
    ),
    NativeSetting(
        "timeout",
        "parameter",
        "init_process_group(timeout=...)",
        "10 minutes for NCCL",
        "How long a collective may wait before the watchdog reports it and takes the process down.",
        "torch",
        "torch/distributed/distributed_c10d.py",
        1627,
        "release",
        re.compile(r"Watchdog"),
    ),
    NativeSetting(
        "TORCH_NCCL_TRACE_BUFFER_SIZE",
        "env",
        "TORCH_NCCL_TRACE_BUFFER_SIZE=2000",
        "0",
        "Keeps the last N collectives of each rank (the flight recorder), dumped on a timeout to "
        "show which rank fell behind.",
        "torch",
        "torch/distributed/distributed_c10d.py",
        2128,
        "release",
        re.compile(r"Watchdog"),
    ),
    NativeSetting(
        "enforce_eager",
        "flag",
        "--enforce-eager",
        "False",
        "vLLM: run the model eagerly, without CUDA graphs or torch.compile; tells a graph or "
        "compile problem from a kernel one.",
        "vllm",
        "vllm/engine/arg_utils.py",
        1000,
        "release",
        _GRAPHS,
    ),
    NativeSetting(
        "disable_custom_all_reduce",
        "flag",
        "--disable-custom-all-reduce",
        "False",
        "vLLM: use NCCL instead of vLLM's own all-reduce kernel across tensor-parallel GPUs.",
        "vllm",
        "vllm/engine/arg_utils.py",
        1367,
        "release",
        _ILLEGAL,
    ),
    NativeSetting(
        "gpu_memory_utilization",
        "flag",
        "--gpu-memory-utilization",
        "0.9",
        "vLLM: the share of GPU memory the engine may take for weights, activations and KV cache.",
        "vllm",
        "vllm/engine/arg_utils.py",
        1391,
        "release",
        _MEMORY,
    ),
    NativeSetting(
        "disable_cuda_graph",
        "flag",
        "--cuda-graph-backend-{decode,prefill}=disabled",
        None,
        "SGLang: no CUDA-graph capture (`--disable-cuda-graph` before 0.5.23, deprecated there).",
        "sglang",
        "sglang/srt/server_args.py",
        411,
        "release",
        _GRAPHS,
    ),
    NativeSetting(
        "mem_fraction_static",
        "flag",
        "--mem-fraction-static",
        None,
        "SGLang: the share of GPU memory for weights and KV cache; lower it when capture or "
        "activations run out of memory.",
        "sglang",
        "sglang/srt/model_executor/runner_backend_utils/__init__.py",
        16,
        "release",
        _MEMORY,
    ),
)


def is_native_file(file_path: str | None) -> bool:
    """Whether a record's file is C++ or CUDA source: no Python frame is ever in it."""
    return file_path is not None and file_path.endswith(NATIVE_SUFFIXES)


def has_no_python_frames(file_path: str | None) -> bool:
    """Whether no Python frame is ever in a record's file: C++ or CUDA source, or the
    compiled library a message literal was read from (`torch/lib/libtorch_cpu.so`, where
    the library names no source file), which Python only calls into."""
    return is_native_file(file_path) or (
        file_path is not None and _COMPILED_LIBRARY.search(file_path) is not None
    )


def _source(setting: NativeSetting) -> ExplanationSource:
    repo, ref, release, prefix = _REPOS[setting.project]
    path = prefix + setting.file_path
    anchor = f"#L{setting.line_number}" if setting.line_number else ""
    return ExplanationSource(
        release=release,
        ref=ref,
        file_path=path,
        line_number=setting.line_number,
        github_url=f"https://github.com/{repo}/blob/{ref}/{path}{anchor}",
    )


def native_explanation(record: ErrorRecord) -> Explanation | None:
    """The settings that bear on a native record, as its page shows them; None for a
    record raised in Python (harvest explains those) or one no setting bears on."""
    if not is_native_file(record.file_path):
        return None
    words = " ".join([record.error_message, *(record.tags or [])])
    found = [
        ExplainedSetting(
            name=setting.name,
            kind=setting.kind,
            typed_as=setting.typed_as,
            default=setting.default,
            help=setting.help,
            via=setting.via,
            source=_source(setting),
        )
        for setting in SETTINGS
        if setting.applies.search(words)
    ]
    if not found:
        return None
    return Explanation(
        release=_REPOS["torch"][2],
        settings=found[:MAX_SETTINGS],
        advice=[],
        trigger=None,
        changes=[],
        entry_points=[],
    )
