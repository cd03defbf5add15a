"""vLLM: the engine and OpenAI-compatible server (vllm-project/vllm)."""

import re

from app.upstreams.base import UpstreamProject, releases

PROJECT = UpstreamProject(
    package="vllm",
    repo="vllm-project/vllm",
    distribution="vllm",
    current_release="vllm==0.33.0",
    # The last patch of each minor release of the year before 0.33.0, newest first.
    older_releases=releases(
        "vllm",
        "0.32.0 0.31.0 0.30.0 0.29.0 0.28.0 0.27.1 0.26.0 0.25.1 0.24.0 0.23.0 0.22.1 0.21.0 "
        "0.20.2 0.19.1 0.18.1 0.17.1 0.16.0 0.15.1 0.14.1 0.13.0 0.12.0",
    ),
    # "INFO 08-14 12:00:01 [core.py:710] ", and before 0.7 without the bracket.
    log_prefix=re.compile(
        r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [0-9]{2}-[0-9]{2} [0-9:]{8}(?: \[?[\w.]+:[0-9]+\])?"
    ),
    stream_names=re.compile(r"vllm|enginecore|apiserver", re.IGNORECASE),
    settings_sources=("engine/arg_utils.py", "envs.py", "config"),
    flag_sources=("engine/arg_utils.py",),
    flag_classes=re.compile(r"(?:Async)?EngineArgs"),
    env_sources=("envs.py",),
    # What vllm/config, sampling_params, engine/arg_utils and lora import on CPU.
    cpu_requirements=tuple(
        (
            "tqdm cbor2 pyzmq huggingface_hub transformers tokenizers safetensors cloudpickle "
            "pybase64 blake3 cachetools aiohttp openai pillow prometheus_client orjson "
            "partial-json-parser pyyaml jsonschema einops ijson setproctitle sentencepiece "
            "tiktoken py-cpuinfo lark python-json-logger requests psutil oss-harmony"
        ).split()
    ),
)
