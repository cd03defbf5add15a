"""Reproducer for record d26a54b65707d46a: "The input ({n} tokens) is longer than the model's
context length ({m} tokens).".

SGLang's tokenizer manager checks every tokenized request before it reaches the scheduler
(`TokenizerManager._validate_one_request`): the prompt's tokens plus the tokens the server
reserves must stay below the context length, else this ValueError, unless the server was
started with `--allow-auto-truncate`, which keeps the start of the prompt and logs a warning.
The trigger is a chat history of 40,000 tokens sent to a server with a context length of
32,768 (Qwen2.5-7B-Instruct's). The fix is the record's two: the client keeps the most
recent tokens that fit with room for the answer (the same check then passes and the request
keeps its max_new_tokens), and a server with `--allow-auto-truncate` (the prompt is cut to
the context length).

The TokenizerManager is made with `TokenizerManager.__new__` and given only what the check
reads (state set directly, not through the constructor, which starts the tokenizer, the ZMQ
sockets and the detokenizer): the context length, no reserved tokens, the two flags and a
model config without a joint scoring head. The request is a plain object holding the fields
the length checks read (text, sampling params, no images): GenerateReqInput and
EmbeddingReqInput stand in as empty classes, since their module (io_struct) imports the
scheduler's batch types and SGLang's kernels, so the generation- and embedding-only checks
after the length checks do not apply to it. Stood in as well: the two mixins the manager
derives from (empty classes; their methods are not used) and `get_exec` (encoder SWA replay
off; the runtime context imports the argument groups). Stubbed: the other SGLang names
tokenizer_manager imports (the runtime context's other accessors among them), which the check
never uses. The environment reader (sglang.srt.environ) is the release's, and the release's
CPU requirements (fastapi, pybase64, uvloop, pyzmq...) come from the cached environment
(`requirements=True`).
"""

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "d26a54b65707d46a"
MANAGERS = "sglang.srt.managers"
TARGET = Target(
    package="sglang",
    version="0.5.23",
    module="sglang.srt.managers.tokenizer_manager",
    classes=("TokenizerManager",),
    stubs={
        "sglang.srt.beam_search.output": (
            "build_beam_search_out",
            "try_build_beam_search_out_dict",
        ),
        "sglang.srt.configs.model_config": ("ModelConfig",),
        "sglang.srt.constants": ("HEALTH_CHECK_RID_PREFIX",),
        "sglang.srt.disaggregation.encoder.receiver": ("create_mm_receiver",),
        "sglang.srt.disaggregation.utils": ("DisaggregationMode",),
        "sglang.srt.elastic_ep.topology": (
            "attn_replica_size",
            "physical_ep_size_to_dp_size",
        ),
        "sglang.srt.layers.joint_schema_head": (
            "max_joint_prompt_tokens",
            "parse_decision_layout",
        ),
        "sglang.srt.lora.lora_registry": (
            "LoRARef",
            "LoRARegistry",
        ),
        "sglang.srt.managers.async_dynamic_batch_tokenizer": ("AsyncDynamicbatchTokenizer",),
        "sglang.srt.managers.disagg_service": ("start_disagg_service",),
        "sglang.srt.managers.embed_types": ("PositionalEmbeds",),
        "sglang.srt.managers.io_struct": (
            "AbortReq",
            "ActiveRanksOutput",
            "BaseBatchReq",
            "BaseReq",
            "BatchEmbeddingOutput",
            "BatchStrOutput",
            "BatchTokenIDOutput",
            "BatchTokenizedEmbeddingReqInput",
            "BatchTokenizedGenerateReqInput",
            "ConfigureLoggingReq",
            "ContinueGenerationReqInput",
            "ElasticScaleUpdateReq",
            "EncoderDispatchErrorReq",
            "FreezeGCReq",
            "HealthCheckOutput",
            "LoadLoRAAdapterReqInput",
            "OpenSessionReqOutput",
            "PauseGenerationReqInput",
            "ScaleElasticEPReqInput",
            "ScaleElasticEPReqOutput",
            "SessionParams",
            "ShutdownReq",
            "TokenizedEmbeddingReqInput",
            "TokenizedGenerateReqInput",
            "UpdateWeightFromDiskReqInput",
            "UpdateWeightFromDiskReqOutput",
            "async_sock_recv",
            "async_sock_send",
            "build_flat_top_logprobs_arrays",
            "flat_top_logprobs_layout",
            "sock_send",
            "unwrap_from_pickle",
        ),
        "sglang.srt.managers.load_snapshot": ("create_load_snapshot_reader",),
        "sglang.srt.managers.mm_utils": ("wrap_shm_features",),
        "sglang.srt.managers.multimodal_processor": (
            "get_mm_processor",
            "import_processors",
        ),
        "sglang.srt.managers.positional_embeds_transport": ("PositionalEmbedsTransport",),
        "sglang.srt.managers.schedule_batch": (
            "MultimodalDataItem",
            "get_request_return_hidden_states_mode",
        ),
        "sglang.srt.managers.scheduler_input_blocker": ("input_blocker_guard_region",),
        "sglang.srt.managers.utils": (
            "compute_num_reserved_tokens",
            "is_health_check_generate_req",
        ),
        "sglang.srt.model_executor.forward_batch_info": ("get_server_return_hidden_states_mode",),
        "sglang.srt.multimodal.transport": ("determine_tensor_transport_mode",),
        "sglang.srt.observability.cpu_monitor": ("start_cpu_monitor_thread",),
        "sglang.srt.observability.metrics_collector": (
            "STAT_LOGGER_ROLE_TOKENIZER",
            "TokenizerMetricsCollector",
            "resolve_collector_class",
            "tokenizer_metric_labels",
        ),
        "sglang.srt.observability.req_time_stats": (
            "APIServerReqTimeStats",
            "convert_time_to_realtime",
            "real_time",
            "set_time_batch",
        ),
        "sglang.srt.observability.request_metrics_exporter": ("RequestMetricsExporterManager",),
        "sglang.srt.observability.trace": (
            "SpanAttributes",
            "extract_trace_headers",
        ),
        "sglang.srt.sampling.custom_logit_processor": ("supports_sampling_mask",),
        "sglang.srt.sampling.sampling_params": ("SamplingParams",),
        "sglang.srt.sampling.watermarking.core": (
            "redact_watermark_command_line",
            "redact_watermark_secrets",
            "resolve_watermark_request",
        ),
        "sglang.srt.server_args": (
            "PortArgs",
            "ServerArgs",
        ),
        "sglang.srt.utils": (
            "configure_gc_warning",
            "freeze_gc",
            "get_bool_env_var",
            "get_or_create_event_loop",
            "kill_process_tree",
        ),
        "sglang.srt.utils.aio_rwlock": ("RWLock",),
        "sglang.srt.utils.cuda_vmm_transport_utils": ("CudaVmmFeatureTransport",),
        "sglang.srt.utils.cudacore_pyspy_dump_utils": (
            "collect_scheduler_processes",
            "pyspy_dump_schedulers",
            "trigger_cuda_user_coredump",
        ),
        "sglang.srt.utils.hf_transformers_utils": (
            "get_processor",
            "get_tokenizer",
            "get_tokenizer_from_processor",
            "resolve_image_processor_backend",
        ),
        "sglang.srt.utils.network": ("get_zmq_socket",),
        "sglang.srt.utils.request_logger": ("RequestLogger",),
        "sglang.srt.utils.watchdog": ("Watchdog",),
        "sglang.srt.utils.weight_versions": ("add_weight_versions_to_meta_info",),
        "sglang.utils": (
            "TypeBasedDispatcher",
            "get_exception_traceback",
        ),
        "sglang.srt.runtime_context": (
            "assert_published",
            "get_context",
            "get_device",
            "get_disagg",
            "get_lora",
            "get_memory",
            "get_mm",
            "get_model",
            "get_observability",
            "get_parallel",
            "get_platform",
            "get_schedule",
            "get_serving",
            "get_spec",
        ),
    },
    requirements=True,
)
DEVICES = ("cpu",)
CONTEXT_LENGTH = 32768  # Qwen2.5-7B-Instruct's
HISTORY = 40000  # tokens of a long chat history
MAX_NEW_TOKENS = 1024


def _stand_ins() -> None:
    """The modules that do not import on CPU, standing in before the target is loaded."""
    io_struct = ModuleType(f"{MANAGERS}.io_struct")
    io_struct.GenerateReqInput = type("GenerateReqInput", (), {})
    io_struct.EmbeddingReqInput = type("EmbeddingReqInput", (), {})
    control = ModuleType(f"{MANAGERS}.tokenizer_control_mixin")
    control.TokenizerControlMixin = type("TokenizerControlMixin", (), {})
    score = ModuleType(f"{MANAGERS}.tokenizer_manager_score_mixin")
    score.TokenizerManagerScoreMixin = type("TokenizerManagerScoreMixin", (), {})
    runtime = ModuleType("sglang.srt.runtime_context")
    features = SimpleNamespace(enable_encoder_swa_bounded_replay=False)
    runtime.get_exec = lambda: SimpleNamespace(features=features)
    for module in (io_struct, control, score, runtime):
        sys.modules[module.__name__] = module


def _manager(module: ModuleType, allow_auto_truncate: bool) -> object:
    """The state _validate_one_request reads, for a server at CONTEXT_LENGTH."""
    manager = module.TokenizerManager.__new__(module.TokenizerManager)
    manager.context_len = CONTEXT_LENGTH
    manager.num_reserved_tokens = 0
    manager.allow_auto_truncate = allow_auto_truncate
    manager.validate_total_tokens = True
    manager.is_generation = True
    manager.model_config = SimpleNamespace(joint_head_config=None, pointer_head=None)
    return manager


def _request() -> object:
    """A chat completion's request, as the tokenizer manager holds it after tokenizing."""
    return SimpleNamespace(sampling_params={"max_new_tokens": MAX_NEW_TOKENS}, image_data=None)


def trigger(module: ModuleType, _device: str) -> None:
    """The whole history is sent."""
    _manager(module, False)._validate_one_request(_request(), list(range(HISTORY)))


def fix(module: ModuleType, _device: str) -> dict:
    """The client keeps the recent tokens that fit; or the server truncates."""
    history = list(range(HISTORY))
    kept = history[-(CONTEXT_LENGTH - MAX_NEW_TOKENS - 64) :]
    request = _request()
    _manager(module, False)._validate_one_request(request, kept)
    require(request.sampling_params["max_new_tokens"] == MAX_NEW_TOKENS, "max_new_tokens cut")
    truncated = list(history)
    _manager(module, True)._validate_one_request(_request(), truncated)
    require(len(truncated) == CONTEXT_LENGTH, f"the server kept {len(truncated)} tokens")
    require(truncated[0] == 0, "the server did not keep the start of the prompt")
    return {"client_kept": len(kept), "server_truncated_to": len(truncated)}


if __name__ == "__main__":
    _stand_ins()
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
