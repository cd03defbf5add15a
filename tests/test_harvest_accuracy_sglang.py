"""Accuracy on real errors for SGLang 0.5.23: trigger real errors by calling the
release's own Python code on CPU with bad arguments or configuration, and check that
/api/match's top result, over a store harvested from the same release, points at the file
and line that raised each one (the traceback's last frame; SGLang's repository keeps the
package under python/).

The release is loaded the way the reproducers load it (`Upstream.load_module`): parent
packages stay empty, so SGLang's runtime never imports, and names the tested code never
uses are stubbed. The triggers run in a subprocess (`accuracy.errors_in_subprocess`), so
none of that reaches the other tests.
"""

import asyncio
from collections.abc import Callable
from functools import partial
from types import ModuleType, SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from tests.helpers import accuracy
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # downloads from the package index

pytest.importorskip("torch", reason="torch comes with the reproducers extra")
pytest.importorskip("msgspec", reason="msgspec comes with the test extra")

SGLANG = ("sglang", "0.5.23")
REPO_PREFIX = "python/"
TOP1_GOAL = 0.97
MIN_ERRORS = 20
MIN_SITES = 15
VOCAB_SIZE = 100
# The server-argument hooks read the platform and a few model helpers only on paths that
# no trigger takes; sglang.srt.utils.common imports triton, PIL and requests.
HOOK_STUBS = {
    "sglang.srt.platforms": ("current_platform",),
    "sglang.srt.utils.common": (
        "get_quantization_config",
        "is_fi_a2a_supported",
        "is_gfx95_supported",
        "is_mps",
        "is_no_spec_infer_or_topk_one",
        "xpu_has_xmx_support",
    ),
}


def _load(module: str, stubs: dict[str, tuple[str, ...]] | None = None) -> ModuleType:
    return RELEASES.load_module(*SGLANG, module, stubs)


def _server_arg_hooks() -> tuple[ModuleType, ModuleType]:
    """The hicache and mamba hooks of ServerArgs resolution.

    sglang.srt.server_args imports the whole runtime, so the hooks get a namespace holding
    just the fields they read; they read them through the real `resolving_view`.
    sglang.srt.arg_groups.overrides imports every model family's overrides: registering
    that package empty (by loading its lightest member first) keeps them out.
    """
    _load("sglang.srt.arg_groups.model_override_base", HOOK_STUBS)
    _load("sglang.srt.arg_groups.model_overrides.beam")
    _load("sglang.srt.arg_groups.overrides", HOOK_STUBS)
    return _load("sglang.srt.arg_groups.hicache_hook"), _load("sglang.srt.arg_groups.mamba_hook")


def _server_args(**fields: object) -> SimpleNamespace:
    """ServerArgs as a hook sees it: just the fields that hook reads before raising."""
    return SimpleNamespace(**fields)


def triggers() -> dict[str, Callable[[], object]]:
    """Each trigger by name; building them loads the release modules they call.

    field_validators loads before lora_registry: it registers sglang.srt.utils as an empty
    package, which then takes the stub of its ConcurrentCounter instead of a stand-in
    module hiding sglang.srt.utils.aio_rwlock.
    """
    sp = _load("sglang.srt.sampling.sampling_params")
    watermark = _load("sglang.srt.sampling.watermarking.config")
    validators = _load("sglang.srt.utils.field_validators")
    lora = _load("sglang.srt.lora.lora_registry", {"sglang.srt.utils": ("ConcurrentCounter",)})
    environ = _load("sglang.srt.environ")
    dsv32 = _load("sglang.srt.entrypoints.openai.encoding_dsv32")
    glm53 = _load("sglang.srt.parser.glm53_chat_template")
    schema = _load("sglang.srt.constrained.json_schema_validation")
    hicache, mamba = _server_arg_hooks()

    def verify(**fields: object) -> None:
        sp.SamplingParams(**fields).verify(VOCAB_SIZE)

    def normalize_without_tokenizer(**fields: object) -> None:
        sp.SamplingParams(**fields).normalize(None)

    user = [{"role": "user", "content": "hello"}]
    calling = {"role": "assistant", "content": ""}
    return {
        "sampling beam width": lambda: verify(beam_width=0),
        "sampling negative temperature": lambda: verify(temperature=-1.0),
        "sampling top_p zero": lambda: verify(top_p=0.0),
        "sampling min_p above 1": lambda: verify(min_p=2.0),
        "sampling top_k zero": lambda: verify(top_k=0),
        "sampling frequency penalty": lambda: verify(frequency_penalty=3.0),
        "sampling repetition penalty": lambda: verify(repetition_penalty=0.0),
        "sampling negative min_new_tokens": lambda: verify(min_new_tokens=-1),
        "sampling negative max_new_tokens": lambda: verify(max_new_tokens=-1),
        "sampling min above max": lambda: verify(min_new_tokens=5, max_new_tokens=2),
        "sampling logit bias out of vocab": lambda: verify(logit_bias={"999": 1.0}),
        "sampling seed not an int": lambda: verify(sampling_seed=1.5),
        "sampling two grammars": lambda: verify(json_schema="{}", regex="a+"),
        "sampling reasoning end ids": lambda: verify(
            custom_params={sp.REQUEST_REASONING_END_TOKEN_IDS_KEY: []}
        ),
        "sampling too many stops": lambda: normalize_without_tokenizer(stop=["x"] * 1000),
        "sampling stop regex too long": lambda: normalize_without_tokenizer(
            stop_regex=["x" * 1000]
        ),
        "sampling stop without tokenizer": lambda: normalize_without_tokenizer(stop=["\n"]),
        "sampling min tokens without tokenizer": lambda: normalize_without_tokenizer(
            min_new_tokens=3
        ),
        "reasoning end ids empty": lambda: sp.set_request_reasoning_end_token_ids({}, []),
        "watermark request not an object": lambda: sp.SamplingParams(watermark="on"),
        "watermark request unknown field": lambda: sp.SamplingParams(watermark={"salt": 1}),
        "watermark key digits": lambda: watermark.parse_watermark_key("xyz"),
        "watermark config json": lambda: watermark.load_watermark_config("{bad"),
        "watermark config fields": lambda: watermark.load_watermark_config('{"salt": 1}'),
        "watermark config window": lambda: watermark.load_watermark_config('{"context_window": 0}'),
        "watermark config key": lambda: watermark.load_watermark_config('{"key": "zz"}'),
        "lora ref without id": lambda: lora.LoRARef(lora_id=None),
        "lora unregister unknown": lambda: asyncio.run(lora.LoRARegistry().unregister("a")),
        "env flag used as bool": lambda: bool(environ.envs.SGLANG_USE_MODELSCOPE),
        "token ids not a list": lambda: validators.validate_list_i64_1d("1,2"),
        "token ids beyond int64": lambda: validators.validate_list_i64_1d([2**70]),
        "dsv32 message index": lambda: dsv32.render_message(5, user, "chat"),
        "dsv32 thinking mode": lambda: dsv32.render_message(0, user, "bogus"),
        "dsv32 role": lambda: dsv32.render_message(0, [{"role": "bot"}], "chat"),
        "dsv32 tool output after user": lambda: dsv32.encode_messages(
            [*user, {"role": "tool", "content": "42"}], thinking_mode="chat"
        ),
        "glm53 tool not an object": lambda: glm53.render_glm53(user, tools=[1]),
        "glm53 tool call without name": lambda: glm53.render_glm53(
            [*user, {**calling, "tool_calls": [{"arguments": {}}]}]
        ),
        "glm53 tool call arguments": lambda: glm53.render_glm53(
            [*user, {**calling, "tool_calls": [{"name": "f", "arguments": "x=1"}]}]
        ),
        "json schema xgrammar keyword": lambda: schema.validate_xgrammar_json_schema(
            {"type": "array", "uniqueItems": True}
        ),
        "json schema outlines constraints": lambda: schema.validate_outlines_json_schema(
            {"type": "string", "pattern": "a+", "maxLength": 3}
        ),
        "hicache host memory fraction": lambda: hicache.handle_hicache_ratio_default(
            _server_args(hicache_host_memory_fraction=2.0)
        ),
        "hicache host memory mode": lambda: hicache.validate_hicache_host_memory_mode(
            _server_args(hicache_host_memory_mode="bogus")
        ),
        "hicache buffer without storage": lambda: hicache.validate_hicache_host_memory_mode(
            _server_args(
                hicache_host_memory_mode="buffer_only",
                hicache_size=1,
                hicache_ratio=None,
                disaggregation_mode="null",
                hicache_storage_backend=None,
            )
        ),
        "mamba philox rounds": lambda: mamba.handle_mamba_backend(
            _server_args(mamba_cache_philox_rounds=-1)
        ),
        "mamba states per path": lambda: mamba.handle_mamba_backend(
            _server_args(mamba_cache_philox_rounds=0, mamba_max_states_per_path=0)
        ),
    }


def real_errors() -> dict[str, accuracy.RealError]:
    """name -> (the real traceback, the file and line that raised it); run in a subprocess."""
    root = RELEASES.unpacked_dir(*SGLANG)
    site = partial(accuracy.raise_site, root=root, repo_prefix=REPO_PREFIX)
    return accuracy.trigger_all(triggers(), site)


@pytest.fixture(scope="module")
def sglang_client(harvested: accuracy.Harvested) -> TestClient:
    """A service whose store holds the drafts harvested from SGLang 0.5.23 (and the other
    releases of the shared store)."""
    result, _ = harvested.results["sglang==0.5.23"]
    assert result.files > 1_000
    return harvested.client


@pytest.fixture(scope="module")
def sglang_errors() -> dict[str, accuracy.RealError]:
    """The real errors, triggered once in a fresh interpreter."""
    return accuracy.errors_in_subprocess(__name__)


def test_the_errors_are_many_and_varied(sglang_errors: dict[str, accuracy.RealError]) -> None:
    sites = {(path, line) for _, path, line in sglang_errors.values()}
    assert len(sglang_errors) >= MIN_ERRORS, sorted(sglang_errors)
    assert len(sites) >= MIN_SITES, sorted(sites)


def test_top_match_points_at_the_raising_line(
    sglang_client: TestClient, sglang_errors: dict[str, accuracy.RealError]
) -> None:
    score = accuracy.score(sglang_client, sglang_errors)
    print("\n" + score.report("sglang 0.5.23"))
    assert score.top1_rate >= TOP1_GOAL, score.misses
