"""Reproducer for record 6c6f3a9552fa39a0: "{pool_name} memory leak detected! {token_msg}".

When SGLang's scheduler goes idle (`Scheduler.on_idle`), it asks its invariant checker
whether every KV slot is accounted for: free in the allocator, evictable or protected in the
radix cache, or held by a session (`SchedulerInvariantChecker._check_all_pools`), and on a
difference calls `_report_leak("pool", ...)`, which hands the message to the release's
`raise_error_or_warn`: a ValueError while `SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE` is
true (its default), a logged warning otherwise. The trigger is an idle server of 4,096 KV
slots where a finished request's 16 slots never went back to the allocator (4,080 free,
nothing cached); the scheduler's own two calls are made on the real checker. The fix is the
record's two: the slots returned (the accounting adds up, nothing is reported), and the
strict check turned off through the environment variable (the same leak is logged as a
warning and counted, the server keeps serving).

The checker is the release's dataclass, built by its constructor, and the pool's counts are
the release's PoolStats; the radix cache and the stats observer are plain objects answering
the counts the check reads (nothing protected, no session). `raise_error_or_warn` is the
release's own function: sglang.srt.utils.common imports triton, which does not import on
CPU, so the module stands in, compiling that one function from the release's file (at its
own lines) when invariant_checker imports it, with a logger and `ceil_align` (a stub; only
paged or DCP pools use it). Stood in as well, answering as for a plain single-GPU server:
`page_interleave_shard_size` (1, a stock allocator; its module imports SGLang's kernels),
`get_parallel` (decode context parallelism off; the runtime context imports the argument
groups) and `scheduler_stage_method` (a decorator of the busy-time check that records
nothing; its module imports the NVTX helpers). Stubbed: the other names invariant_checker
and pool_stats_observer import (allocators, memory pools, metrics, watchdog), which the
check never uses. The environment reader (sglang.srt.environ) is the release's.
"""

import ast
import logging
import os
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "6c6f3a9552fa39a0"
COMMON = "sglang.srt.utils.common"
INTERLEAVE = "sglang.srt.mem_cache.allocator.page_interleave"
RUNTIME = "sglang.srt.runtime_context"
STAGES = "sglang.srt.observability.scheduler_stage_metrics"
STRICT = "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE"
TARGET = Target(
    package="sglang",
    version="0.5.23",
    module="sglang.srt.managers.scheduler_components.invariant_checker",
    classes=("SchedulerInvariantChecker", "PoolStats"),
    stubs={
        "sglang.srt.disaggregation.utils": ("DisaggregationMode",),
        "sglang.srt.mem_cache.allocator": ("BaseTokenToKVPoolAllocator",),
        "sglang.srt.mem_cache.allocator.swa": ("is_swa_req_ring",),
        "sglang.srt.mem_cache.base_prefix_cache": ("BasePrefixCache",),
        "sglang.srt.mem_cache.memory_pool": ("ReqToTokenPool",),
        "sglang.srt.mem_cache.unified_cache.component_type": ("ComponentType",),
        STAGES: ("SCHEDULER_STAGE_SANITY_CHECK_CACHE", "SchedulerStageMetricsRecorder"),
        "sglang.srt.utils.watchdog": ("WatchdogRaw",),
        COMMON: ("ceil_align",),
    },
)
DEVICES = ("cpu",)
POOL_SIZE = 4096  # KV slots of the server's token pool
LEAKED = 16  # a finished request's slots that never went back


def _release_function(name: str) -> object:
    """The stand-in module's `name` when invariant_checker imports it: the release's own
    function, compiled from its file (at its own lines) into the stand-in module."""
    if name != "raise_error_or_warn":
        raise AttributeError(name)
    path = Path(sys.modules["sglang.srt"].__path__[0]) / "utils" / "common.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    (node,) = [n for n in tree.body if getattr(n, "name", None) == name]
    common = sys.modules[COMMON]
    exec(compile(ast.Module([node], []), str(path), "exec"), common.__dict__)
    return common.__dict__[name]


def _stand_ins() -> None:
    """The modules that do not import on CPU, standing in before the target is loaded."""
    interleave = ModuleType(INTERLEAVE)
    interleave.page_interleave_shard_size = lambda _allocator: 1  # a stock allocator
    runtime = ModuleType(RUNTIME)
    runtime.get_parallel = lambda: SimpleNamespace(dcp_enabled=False)
    stages = ModuleType(STAGES)
    stages.scheduler_stage_method = lambda _stage: lambda method: method  # records nothing
    common = ModuleType(COMMON)
    common.logger = logging.getLogger(COMMON)
    common.__getattr__ = _release_function
    for module in (interleave, runtime, stages, common):
        sys.modules[module.__name__] = module


def _checker(module: ModuleType) -> object:
    """An idle server's invariant checker: one plain KV pool, nothing running."""
    nothing = SimpleNamespace(
        protected_size=lambda: 0,
        session_held_tokens=lambda: 0,
    )
    return module.SchedulerInvariantChecker(
        is_hybrid_swa=False,
        is_hybrid_ssm=False,
        disaggregation_mode=None,
        page_size=1,
        full_tokens_per_layer=None,
        swa_tokens_per_layer=None,
        max_total_num_tokens=POOL_SIZE,
        tree_cache=nothing,
        token_to_kv_pool_allocator=SimpleNamespace(page_size=1),
        req_to_token_pool=None,
        pool_stats_observer=nothing,
        get_last_batch=lambda: None,
        get_running_batch=lambda: None,
        scheduler_stage_metrics=None,
    )


def _on_idle(module: ModuleType, checker: object, free: int) -> bool:
    """Scheduler.on_idle's leak check with `free` slots in the allocator: whether it leaked."""
    stats = module.PoolStats(
        full_num_used=POOL_SIZE - free,
        full_token_usage=(POOL_SIZE - free) / POOL_SIZE,
        full_available_size=free,
        full_evictable_size=0,
        full_capacity=POOL_SIZE,
    )
    has_leak, messages = checker._check_all_pools(stats)
    if has_leak:
        checker._report_leak("pool", "\n".join(messages))
    return has_leak


def trigger(module: ModuleType, _device: str) -> None:
    """Idle, with a finished request's slots still taken from the allocator."""
    _on_idle(module, _checker(module), POOL_SIZE - LEAKED)


def fix(module: ModuleType, _device: str) -> dict:
    """The slots returned; and the strict check off, which logs the same leak instead."""
    checker = _checker(module)
    require(not _on_idle(module, checker, POOL_SIZE), "a balanced pool was reported")
    before = os.environ.get(STRICT)
    os.environ[STRICT] = "0"
    try:
        leaked = _on_idle(module, checker, POOL_SIZE - LEAKED)
    finally:
        if before is None:
            del os.environ[STRICT]
        else:
            os.environ[STRICT] = before
    require(leaked, "the leak was not found with the strict check off")
    warned = checker.count_memory_leak_warnings
    require(warned == 1, f"{warned} warnings counted")
    return {"balanced": "no leak reported", f"{STRICT}=0": f"{warned} warning, no raise"}


if __name__ == "__main__":
    _stand_ins()
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
