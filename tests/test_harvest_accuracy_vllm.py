"""Accuracy on real errors for vLLM 0.33.0: trigger real errors by calling the
release's own Python code on CPU with bad arguments or configuration, and check that
/api/match's top result, over a store harvested from the same release, points at the file
and line that raised each one (the traceback's last frame).

The release is loaded the way the reproducers load it (`Upstream.load_module`): parent
packages stay empty, so vLLM's serving stack never imports, and names the tested code never
uses are stubbed. The triggers run in a subprocess (`accuracy.errors_in_subprocess`), so
none of that reaches the other tests.
"""

import os
from collections.abc import Callable
from functools import partial
from types import ModuleType, SimpleNamespace
from typing import Annotated

import pytest
from fastapi.testclient import TestClient

from tests.helpers import accuracy
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # downloads from the package index

torch = pytest.importorskip("torch", reason="torch comes with the reproducers extra")
pytest.importorskip("msgspec", reason="msgspec comes with the test extra")

VLLM = ("vllm", "0.33.0")
TOP1_GOAL = 0.97
MIN_ERRORS = 20
MIN_SITES = 15
# vllm.utils.hashing imports cbor2, only to hash configs; no trigger hashes one.
NO_HASHING = {"vllm.utils.hashing": ("safe_hash",)}


def _load(module: str, stubs: dict[str, tuple[str, ...]] | None = None) -> ModuleType:
    return RELEASES.load_module(*VLLM, module, stubs)


def _sampling_params() -> ModuleType:
    """vllm.sampling_params without vllm.config's models, the tokenizers or serial_utils.

    Sampling and pooling parameters name them only in annotations and as SamplingParams'
    pydantic-schema mixin, so empty classes stand in (PoolerConfig for pooling_params);
    validation (`__post_init__`, `_verify_args`, `verify`) runs as released.
    """
    _load("vllm.config.utils")  # registers vllm.config as an empty package first
    accuracy.stand_in_types(
        "vllm.config", "ModelConfig", "PoolerConfig", "SpeculativeConfig", "StructuredOutputsConfig"
    )
    accuracy.stand_in_types("vllm.tokenizers", "TokenizerLike")
    accuracy.stand_in_types("vllm.v1.serial_utils", "PydanticMsgspecMixin")
    return _load(
        "vllm.sampling_params",
        {
            "vllm.utils.mistral": ("is_mistral_tokenizer",),
            "vllm.utils.torch_utils": ("make_ndarray_with_pad",),
        },
    )


def _with_env(name: str, value: str, read: Callable[[], object]) -> object:
    """vllm.envs reads the environment on each access: set a variable only for one read."""
    os.environ[name] = value
    try:
        return read()
    finally:
        del os.environ[name]


def triggers() -> dict[str, Callable[[], object]]:
    """Each trigger by name; building them loads the release modules they call.

    The plain modules load first: a stand-in registered before them would hide the package
    they live in (vllm.tokenizers), and vllm.utils, whose own light __init__ holds a tested
    function, loads before its submodules would register it as an empty package.
    """
    utils = _load("vllm.utils")
    lora = _load("vllm.lora.request")
    config_utils = _load("vllm.config.utils")
    mamba = _load("vllm.config.mamba")
    kernel = _load("vllm.config.kernel")
    kv_transfer = _load("vllm.config.kv_transfer", NO_HASHING)
    engram = _load("vllm.config.engram", NO_HASHING)
    profiler = _load("vllm.config.profiler", NO_HASHING)
    envs = _load("vllm.envs")
    accuracy.stand_in_types("vllm.renderers.chat_utils.types", "ChatTemplateContentFormatOption")
    chat_template = _load("vllm.renderers.chat_utils.chat_template")
    deepseek = _load("vllm.tokenizers.deepseek_v32_encoding")
    schema = _load("vllm.utils.tensor_schema")
    logprobs = _load("vllm.logprobs")
    collections = _load("vllm.utils.collection_utils")
    sp = _sampling_params()
    params = sp.SamplingParams
    pooling = _load("vllm.pooling_params")

    class ImagePixelInputs(schema.TensorSchema):
        """A multimodal model's pixel inputs, declared the way vLLM's models declare them."""

        pixel_values: Annotated[torch.Tensor, schema.TensorShape("bn", 3, "h", "w")]

    def hisparse(extra: dict) -> object:
        kv_config = SimpleNamespace(
            kv_connector="HiSparseConnector", kv_connector_extra_config=extra
        )
        return kv_transfer.hisparse_host_pool_gib(kv_config)

    user = [{"role": "user", "content": "hello"}]
    return {
        "sampling negative temperature": lambda: params(temperature=-1.0),
        "sampling temperature above 2": lambda: params(temperature=5.0),
        "sampling top_p zero": lambda: params(top_p=0.0),
        "sampling top_k below -1": lambda: params(top_k=-5),
        "sampling top_k float": lambda: params(top_k=2.5),
        "sampling min_p above 1": lambda: params(min_p=2.0),
        "sampling max_tokens zero": lambda: params(max_tokens=0),
        "sampling min_tokens above max_tokens": lambda: params(min_tokens=5, max_tokens=2),
        "sampling presence penalty": lambda: params(presence_penalty=3.0),
        "sampling repetition penalty zero": lambda: params(repetition_penalty=0.0),
        "sampling negative logprobs": lambda: params(logprobs=-3),
        "sampling empty stop string": lambda: params(stop=[""]),
        "sampling stop without detokenize": lambda: params(stop=["\n"], detokenize=False),
        "sampling n zero": lambda: params(n=0),
        "sampling n not an int": lambda: params(n="2"),
        "sampling greedy with n": lambda: params(temperature=0.0, n=2),
        "sampling thinking budget": lambda: params(thinking_token_budget=-5),
        "sampling logit bias keys": lambda: params.from_optional(logit_bias={"x": 1.0}),
        "structured outputs two constraints": lambda: sp.StructuredOutputsParams(
            json={"type": "object"}, regex="a+"
        ),
        "repetition detection sizes": lambda: sp.RepetitionDetectionParams(max_pattern_size=-1),
        "pooling output kind": lambda: pooling.PoolingParams(
            output_kind=sp.RequestOutputKind.CUMULATIVE
        ),
        "pooling removed task": lambda: pooling.PoolingParams(task="score"),
        "pooling late chunk size": lambda: pooling.LateChunkingParams(chunk_size=0).verify(),
        "lora id zero": lambda: lora.LoRARequest("adapter", 0, "/adapters/a"),
        "mamba backend name": lambda: mamba.MambaBackendEnum["bogus"],
        "kernel passthrough all2all": lambda: kernel.bind_passthrough_all2all_backend(
            "triton", SimpleNamespace(all2all_backend=kernel.PASSTHROUGH_ALL2ALL_BACKEND)
        ),
        "kernel moe ep model": lambda: kernel.validate_flashinfer_moe_ep_model(
            kernel.FLASHINFER_MOE_EP_DEEP_GEMM, ["LlamaForCausalLM"]
        ),
        "hisparse pool size missing": lambda: hisparse({}),
        "hisparse pool size negative": lambda: hisparse({"host_pool_gib": -1}),
        "engram dp shared memory": lambda: engram.EngramConfig(
            dp_shared_memory=True, cpu_offload=True
        ).verify_parallel_config(SimpleNamespace(data_parallel_size=1, enable_elastic_ep=False)),
        "config field missing": lambda: config_utils.get_field(engram.EngramConfig, "bogus"),
        "config hash of an object": lambda: config_utils.normalize_value(object()),
        "profile prefix": lambda: profiler.validate_profile_prefix("-trace"),
        "profile delay": lambda: profiler.validate_profile_iteration_bounds(-1, None),
        "env choice": lambda: _with_env(
            "VLLM_WORKER_MULTIPROC_METHOD", "bogus", lambda: envs.VLLM_WORKER_MULTIPROC_METHOD
        ),
        "env unknown": lambda: envs.VLLM_NO_SUCH_SETTING,
        "chat template type": lambda: chat_template.validate_chat_template(123),
        "chat template path": lambda: chat_template.validate_chat_template("no_such.jinja"),
        "chat template file": lambda: chat_template.load_chat_template("/nonexistent/t.jinja"),
        "deepseek message index": lambda: deepseek.render_message(5, user, "chat"),
        "deepseek thinking mode": lambda: deepseek.render_message(0, user, "bogus"),
        "deepseek role": lambda: deepseek.render_message(0, [{"role": "bot"}], "chat"),
        "deepseek tool output after user": lambda: deepseek.encode_messages(
            [*user, {"role": "tool", "content": "42"}], thinking_mode="chat"
        ),
        "multimodal input rank": lambda: ImagePixelInputs(pixel_values=torch.zeros(2, 3, 4)),
        "multimodal input dim": lambda: ImagePixelInputs(pixel_values=torch.zeros(2, 4, 4, 4)),
        "multimodal input missing": lambda: ImagePixelInputs(),
        "prompt without tokens or embeds": lambda: utils.length_from_prompt_token_ids_or_embeds(
            None, None
        ),
        "lazy registry key": lambda: collections.LazyDict({"gelu": abs})["bogus"],
        "flat logprobs set": lambda: logprobs.FlatLogprobs().__setitem__(0, None),
    }


def real_errors() -> dict[str, accuracy.RealError]:
    """name -> (the real traceback, the file and line that raised it); run in a subprocess."""
    site = partial(accuracy.raise_site, root=RELEASES.unpacked_dir(*VLLM))
    return accuracy.trigger_all(triggers(), site)


@pytest.fixture(scope="module")
def vllm_client(harvested: accuracy.Harvested) -> TestClient:
    """A service whose store holds the drafts harvested from vLLM 0.33.0 (and the other
    releases of the shared store)."""
    result, _ = harvested.results["vllm==0.33.0"]
    assert result.files > 1_000
    return harvested.client


@pytest.fixture(scope="module")
def vllm_errors() -> dict[str, accuracy.RealError]:
    """The real errors, triggered once in a fresh interpreter."""
    return accuracy.errors_in_subprocess(__name__)


def test_the_errors_are_many_and_varied(vllm_errors: dict[str, accuracy.RealError]) -> None:
    sites = {(path, line) for _, path, line in vllm_errors.values()}
    assert len(vllm_errors) >= MIN_ERRORS, sorted(vllm_errors)
    assert len(sites) >= MIN_SITES, sorted(sites)


def test_top_match_points_at_the_raising_line(
    vllm_client: TestClient, vllm_errors: dict[str, accuracy.RealError]
) -> None:
    score = accuracy.score(vllm_client, vllm_errors)
    print("\n" + score.report("vllm 0.33.0"))
    assert score.top1_rate >= TOP1_GOAL, score.misses
