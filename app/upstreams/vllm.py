"""vLLM: the engine and OpenAI-compatible server (vllm-project/vllm)."""

import re

from app.upstreams.base import UpstreamProject, entry_point, releases

PROJECT = UpstreamProject(
    package="vllm",
    repo="vllm-project/vllm",
    distribution="vllm",
    native_sources={"csrc": "csrc"},
    current_release="vllm==0.33.0",
    # The last patch of each minor release before 0.33.0, back to 0.2 (2023): people still
    # run them, and paste their messages and raise sites. Newest first.
    older_releases=releases(
        "vllm",
        "0.32.0 0.31.0 0.30.0 0.29.0 0.28.0 0.27.1 0.26.0 0.25.1 0.24.0 0.23.0 0.22.1 0.21.0 "
        "0.20.2 0.19.1 0.18.1 0.17.1 0.16.0 0.15.1 0.14.1 0.13.0 0.12.0 0.11.2 0.10.2 0.9.2 "
        "0.8.5.post1 0.7.3 0.6.6.post1 0.5.5 0.4.3 0.3.3 0.2.7",
    ),
    # "INFO 08-14 12:00:01 [core.py:710] ", and before 0.7 without the bracket.
    log_prefix=re.compile(
        r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [0-9]{2}-[0-9]{2} [0-9:]{8}(?: \[?[\w.]+:[0-9]+\])?"
    ),
    stream_names=re.compile(r"vllm|enginecore|apiserver", re.IGNORECASE),
    # "vLLM API server version 0.6.3", "Initializing an LLM engine (v0.6.3) with config",
    # "Initializing a V1 LLM engine (v0.8.5) with config", "vLLM version 0.9.1". It begins
    # with the literal all three share, which the regex engine then seeks as a string (35
    # us of a 5 KB paste with an alternation first, tried at every character).
    version_banner=re.compile(
        r"LLM (?:(?<=vLLM )API server version |engine \(|(?<=vLLM )version:? )"
        r"v?(?P<version>[0-9]{1,3}\.[0-9]{1,4}(?:\.[0-9]{1,4})?(?:\.?post[0-9]{1,3})?)\b"
    ),
    # The OpenAI-compatible server answers many request errors as a JSON body
    # ({"object": "error", "message": ..., "type": "BadRequestError", "code": 400}).
    error_responses=("create_error_response",),
    settings_sources=("engine/arg_utils.py", "envs.py", "config"),
    flag_sources=("engine/arg_utils.py",),
    flag_classes=re.compile(r"(?:Async)?EngineArgs"),
    env_sources=("envs.py",),
    entry_points=(
        entry_point("vllm/entrypoints/llm.py", "LLM.__init__", "LLM(...)"),
        entry_point("vllm/entrypoints/llm.py", "LLM.generate", "LLM.generate(...)"),
        entry_point("vllm/entrypoints/llm.py", "LLM.chat", "LLM.chat(...)"),
        entry_point(
            "vllm/engine/arg_utils.py",
            "EngineArgs.create_engine_config",
            "the engine arguments (`vllm serve` flags, `LLM(...)` keywords)",
        ),
        entry_point("vllm/sampling_params.py", "SamplingParams.__init__", "SamplingParams(...)"),
        entry_point(
            "vllm/sampling_params.py", "SamplingParams.__post_init__", "SamplingParams(...)"
        ),
        entry_point(
            "vllm/v1/engine/core.py",
            "EngineCore.__init__",
            "the engine core's start-up (`vllm serve`, `LLM(...)`)",
        ),
        entry_point(
            "vllm/v1/worker/gpu_worker.py",
            "Worker.load_model",
            "model loading in each GPU worker (`vllm serve`, `LLM(...)`)",
        ),
        entry_point(
            "vllm/v1/worker/gpu_worker.py",
            "Worker.determine_available_memory",
            "the memory profiling at start-up (`--gpu-memory-utilization`)",
        ),
        entry_point("vllm/entrypoints/cli/serve.py", "ServeSubcommand.cmd", "vllm serve"),
        entry_point("vllm/entrypoints/openai/api_server.py", "run_server", "vllm serve"),
        entry_point(
            "serving_chat.py",
            "OpenAIServingChat.create_chat_completion",
            "POST /v1/chat/completions",
        ),
        entry_point(
            "chat_completion/serving.py",
            "OpenAIServingChat.create_chat_completion",
            "POST /v1/chat/completions",
        ),
        entry_point(
            "serving_completion.py",
            "OpenAIServingCompletion.create_completion",
            "POST /v1/completions",
        ),
        entry_point(
            "completion/serving.py",
            "OpenAIServingCompletion.create_completion",
            "POST /v1/completions",
        ),
    ),
    # What vllm/config, sampling_params, engine/arg_utils and lora import on CPU
    # (compressed-tensors: the quantization registry imports its config).
    keyword_suffixes={"VLLMValidationError": ("parameter", "value")},
)
