"""Real-shaped logs for the client's tests: what vLLM and torchrun print when a curated
record's error is raised (data/records), with their colour codes and line prefixes."""

FREE_BUFFERS = "Attempted to free more buffers than allocated"
FREE_BUFFERS_ID = "c53f6de81577a6bc"
VMM_SLICE = "CUDA VMM pool has no occupied slice at control offset 4096"
VMM_SLICE_ID = "edc4df790b100979"

ENGINE_PREFIX = "\x1b[1;36m(EngineCore_DP0 pid=4242)\x1b[0;0m "
_ERROR = ENGINE_PREFIX + "ERROR 11-30 10:00:09 [core.py:710] "

VLLM_LOG = (
    "INFO 11-30 10:00:01 [__init__.py:239] Automatically detected platform cuda.\n"
    "\x1b[32mINFO\x1b[0m 11-30 10:00:02 [api_server.py:1805] vLLM API server version 0.33.0\n"
    + ENGINE_PREFIX
    + "INFO 11-30 10:00:05 [core.py:75] Initializing a V1 LLM engine (v0.33.0)\n"
    + "".join(
        _ERROR + line + "\n"
        for line in (
            "EngineCore failed to start.",
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/site-packages/vllm/v1/engine/core.py", '
            "line 701, in run_engine_core",
            "    engine_core = EngineCoreProc(*args, **kwargs)",
            '  File "/usr/local/lib/python3.12/site-packages/vllm/distributed/kv_transfer/'
            'kv_connector/v1/hf3fs/utils/gather_scatter_helper.py", line 285, in free_buffer',
            '    raise RuntimeError("Attempted to free more buffers than allocated")',
            f"RuntimeError: {FREE_BUFFERS}",
        )
    )
    + "ERROR 11-30 10:00:10 [core.py:720] EngineCore exited; shutting down.\n"
    + "INFO 11-30 10:00:11 [launcher.py:80] Shutting down FastAPI HTTP server.\n"
)

TORCHRUN_LOG = (
    "W1130 10:20:00.123000 77 torch/distributed/run.py:793] Setting OMP_NUM_THREADS=1\n"
    + "".join(
        f"[rank0]: {line}\n"
        for line in (
            "Traceback (most recent call last):",
            '  File "/workspace/train.py", line 40, in <module>',
            "    main()",
            '  File "/usr/local/lib/python3.12/site-packages/sglang/srt/mem_cache/'
            'vmm_pool.py", line 212, in cancel',
            '    raise RuntimeError(f"CUDA VMM pool has no occupied slice at control offset '
            '{control_offset}")',
            f"RuntimeError: {VMM_SLICE}",
        )
    )
    + "E1130 10:20:03.456000 77 torch/distributed/elastic/multiprocessing/api.py:869] "
    "failed (exitcode: 1) local_rank: 0 (pid: 78) of binary: /usr/bin/python3\n"
)
