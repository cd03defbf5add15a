"""SGLang: the serving runtime (sgl-project/sglang); its package lives under python/."""

import re

from app.upstreams.base import BundledPackage, UpstreamProject, entry_point, releases

PROJECT = UpstreamProject(
    package="sglang",
    repo="sgl-project/sglang",
    distribution="sglang",
    path_prefix="python/",
    # Its kernels' Python (`sgl_kernel/load_utils.py`'s "Could not load any common_ops
    # library!"), from the wheel of the release each SGLang release pins.
    bundled=(
        BundledPackage(
            distributions=("sgl-kernel", "sglang-kernel"),
            package="sgl_kernel",
            path_prefix="sgl-kernel/python/",
        ),
    ),
    current_release="sglang==0.5.23",
    # The last patch of each 0.5.N and 0.4.N release before 0.5.23, and of the 0.3, 0.2 and
    # 0.1 lines (2024): people still run them. The 0.1 line also keeps 0.1.17, its last
    # release to ship managers/router (0.1.18 renamed it managers/controller), whose raise
    # sites the first half of 2024's pastes name. Newest first.
    older_releases=releases(
        "sglang",
        "0.5.22 0.5.21 0.5.20 0.5.19 0.5.18 0.5.17 0.5.16 0.5.15.post1 0.5.14 0.5.13.post1 "
        "0.5.12.post1 0.5.11 0.5.10.post1 0.5.9 0.5.8.post1 0.5.7 0.5.6.post2 0.5.5.post3 "
        "0.5.4.post3 0.5.3.post3 0.5.2 0.5.1.post3 0.4.10.post2 0.4.9.post6 0.4.8.post1 "
        "0.4.7.post1 0.4.6.post5 0.4.5.post3 0.4.4.post4 0.4.3.post4 0.4.2.post4 0.4.1.post7 "
        "0.4.0.post2 0.3.6.post3 0.2.15 0.1.26 0.1.17",
    ),
    # "[2026-08-14 12:00:01 TP0] ": a timestamp and the parallel ranks of the process.
    log_prefix=re.compile(r"\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}(?: (?:TP|DP|PP|EP)[0-9]+)+\]"),
    stream_names=re.compile(r"sglang|scheduler|detokenizer", re.IGNORECASE),
    # The OpenAI-compatible server answers many request errors as a JSON body
    # ({"object": "error", "message": ..., "type": "BadRequestError", "code": 400}).
    error_responses=("create_error_response",),
    # The flags live in ServerArgs, or (from 0.5.23) in the namespaces of arg_groups/fields.
    settings_sources=("srt/server_args.py", "srt/environ.py", "srt/arg_groups/fields"),
    flag_sources=("srt/server_args.py", "srt/arg_groups/fields"),
    # PortArgs holds the ports SGLang picks for its own processes, not flags.
    flag_classes=re.compile(r"(?!PortArgs$)\w+"),
    flags_from_fields=True,
    env_sources=("srt/environ.py",),
    entry_points=(
        entry_point(
            "sglang/srt/entrypoints/http_server.py",
            "launch_server",
            "python -m sglang.launch_server",
        ),
        entry_point("sglang/srt/entrypoints/engine.py", "Engine.__init__", "sglang.Engine(...)"),
        entry_point(
            "sglang/srt/managers/scheduler.py",
            "Scheduler.__init__",
            "the scheduler's start-up (`sglang.launch_server`, `Engine(...)`)",
        ),
        entry_point(
            "sglang/srt/model_executor/model_runner.py",
            "ModelRunner.__init__",
            "the model runner's start-up: loading the model, sizing the KV cache",
        ),
        entry_point(
            "sglang/srt/managers/tokenizer_manager.py",
            "TokenizerManager.generate_request",
            "a generate request (`/generate`, `/v1/chat/completions`, `Engine.generate`)",
        ),
        entry_point("sglang/srt/entrypoints/engine.py", "Engine.generate", "Engine.generate(...)"),
        entry_point(
            "sglang/srt/server_args.py",
            "ServerArgs.__post_init__",
            "the server arguments (`sglang.launch_server` flags, `Engine(...)` keywords)",
        ),
        entry_point(
            "sglang/srt/server_args.py",
            "ServerArgs.check_server_args",
            "the server arguments (`sglang.launch_server` flags, `Engine(...)` keywords)",
        ),
    ),
)
