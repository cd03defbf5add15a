"""A match's score is the sum of its named components, and every match result says which
ranking computed it: a reader can add a score up and see what to disagree with.

The pastes are offline copies of what people post: seed 002's SGLang traceback (its real
frames), the same error with another class, under a server's log, as a bare line, cut short,
and a log line that mentions a record without an exception around it.
"""

import json
import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.exception_classes import class_graph_of
from app.matching import partial
from app.matching.candidate import Candidate
from app.matching.index import PatternIndex
from app.matching.rank_order import (
    copies_below_likely,
    exceptions_first,
    frames_first,
    literal_before_helpers,
    wrappers_below_likely,
)
from app.matching.score import Component, Match, total
from app.matching.score_weights import (
    CLASS_AGREES,
    CLASS_DIFFERS,
    FILE_IN_FRAMES,
    FILE_INNERMOST,
    FRAMES_MARGIN,
    FULL_MESSAGE,
    LIKELY,
    RAISED_ELSEWHERE,
    RANKING_VERSION,
    REVIEWED_BONUS,
    SAME_FUNCTION,
    SAME_LINE,
)
from app.matching.service import find_matches
from app.records.site_keys import message_template
from app.upstreams import VLLM
from tests.helpers.real_pastes import case
from tests.helpers.records import make_record

SEED_002 = "edc4df790b100979"
SEED_002_MESSAGE = "CUDA VMM pool has no occupied slice at control offset 4096"
SGLANG = "/sgl-workspace/sglang/python/sglang/srt"
SEED_002_TRACEBACK = f"""\
ERROR 08-28 05:02:11 [scheduler.py:2210] Scheduler hit an exception:
Traceback (most recent call last):
  File "{SGLANG}/managers/scheduler.py", line 2208, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "{SGLANG}/managers/mm_utils.py", line 412, in cancel_request_items
    pool.cancel_proxy(proxy)
  File "{SGLANG}/utils/cuda_vmm_transport_utils.py", line 545, in cancel_proxy
    self._cancel_control_offset(proxy.control_offset)
  File "{SGLANG}/utils/cuda_vmm_transport_utils.py", line 535, in _cancel_control_offset
    raise RuntimeError(
RuntimeError: {SEED_002_MESSAGE}
"""
PASTES = {
    "traceback": SEED_002_TRACEBACK,
    "other class": SEED_002_TRACEBACK.replace("RuntimeError: CUDA", "ValueError: CUDA"),
    "in a log": "INFO 08-28 05:02:10 [scheduler.py:1432] Prefill batch.\n"
    + SEED_002_TRACEBACK
    + "INFO 08-28 05:02:12 [scheduler.py:1511] Decode batch.\n",
    "bare line": f"RuntimeError: {SEED_002_MESSAGE}\n",
    "cut": f"RuntimeError: {SEED_002_MESSAGE[:40]}\n",
    "memory": "MemoryError: Not enough space in the data buffer, try calling free_buf() to "
    "free up space\n",
    "log line only": "WARNING 08-28 05:02:11 retrying: Not enough space in the data buffer, "
    "try calling free_buf() to free up space\n",
}


def _assert_adds_up(match: dict) -> None:
    """The match's components, as the API answers them, add up to its score."""
    assert match["components"], match["id"]
    for part in match["components"]:
        assert set(part) == {"id", "points", "hint"}
        assert part["id"]
        assert part["hint"]
    points = sum(part["points"] for part in match["components"])
    assert math.isclose(points, match["score"], abs_tol=1e-9), match
    assert match["reasons"]


@pytest.mark.parametrize("name", sorted(PASTES))
def test_every_score_is_the_sum_of_its_components(client: TestClient, name: str) -> None:
    response = client.post("/api/match", json={"text": PASTES[name]})
    assert response.status_code == 200
    body = response.json()
    assert body["rankingVersion"] == RANKING_VERSION
    assert body["matches"], name
    for match in body["matches"]:
        _assert_adds_up(match)


def test_the_batch_gives_each_result_its_ranking_version(client: TestClient) -> None:
    response = client.post("/api/match/batch", json={"texts": list(PASTES.values())})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [result["rankingVersion"] for result in results] == [RANKING_VERSION] * len(PASTES)
    for result in results:
        for match in result["matches"]:
            _assert_adds_up(match)


def test_the_components_name_what_agreed_with_the_weights_they_carry(client: TestClient) -> None:
    top = client.post("/api/match", json={"text": PASTES["traceback"]}).json()["matches"][0]
    assert top["id"] == SEED_002
    points = {part["id"]: part["points"] for part in top["components"]}
    assert points == {
        "message.full": FULL_MESSAGE,
        "class.agrees": CLASS_AGREES,
        "frames.file": FILE_IN_FRAMES,
        "frames.innermost": FILE_INNERMOST,
        "frames.line": SAME_LINE,
        "frames.function": SAME_FUNCTION,
        "repo.agrees": 5,
        "position.last": 4,
        "message.specificity": points["message.specificity"],
        "record.reviewed": REVIEWED_BONUS,
    }
    assert 0 < points["message.specificity"] <= 15
    hints = {part["id"]: part["hint"] for part in top["components"]}
    raised = "raised at python/sglang/srt/utils/cuda_vmm_transport_utils.py:535, the record's line"
    assert hints["frames.line"] == raised
    assert raised in top["reasons"]  # the text reasons say the same


def test_a_differing_class_is_a_negative_component(client: TestClient) -> None:
    top = client.post("/api/match", json={"text": PASTES["other class"]}).json()["matches"][0]
    assert top["id"] == SEED_002
    [differs] = [part for part in top["components"] if part["id"] == "class.differs"]
    assert differs["points"] == CLASS_DIFFERS
    assert differs["hint"] == "record raises RuntimeError, not ValueError"


def test_a_cut_message_and_a_log_line_are_named_for_what_they_are(client: TestClient) -> None:
    cut = client.post("/api/match", json={"text": PASTES["cut"]}).json()["matches"][0]
    assert cut["id"] == SEED_002
    assert cut["components"][0]["id"] == "message.cut"
    assert cut["components"][0]["hint"] == cut["reasons"][0]
    log = client.post("/api/match", json={"text": PASTES["log line only"]}).json()["matches"][0]
    assert log["components"][0]["id"] == "message.in-log-line"


def test_a_score_lowered_below_the_frames_records_still_adds_up() -> None:
    """A record from no frame's file that outscores one from a frame's file is put below it;
    the points it loses are a component of their own."""
    hint = "pattern matches the whole exception message"
    in_frames = Match("a" * 16, 0.0, 0, {}, components=[Component("message.full", 40, hint)])
    in_frames.score, in_frames.in_frames = total(in_frames.components), True
    parts = [Component("message.full", 40, hint), Component("record.reviewed", 7, "reviewed")]
    elsewhere = Match("b" * 16, total(parts), 0, {}, components=parts)
    frames_first([in_frames, elsewhere])
    assert elsewhere.score == 40 - FRAMES_MARGIN
    assert elsewhere.components[-1].id == "rank.below-frames"
    assert elsewhere.components[-1].points == -7 - FRAMES_MARGIN
    assert elsewhere.score == total(elsewhere.components)
    assert elsewhere.reasons[-1] == elsewhere.components[-1].hint


def test_a_log_line_record_that_outscores_the_exception_is_put_below_it() -> None:
    """A warning logged before a traceback is context: its record, however well it fits
    its line, comes after the best record of the paste's exception, and says why; with no
    exception explained it keeps its place."""
    hint = "pattern matches the whole exception message"
    exception = Match("a" * 16, 0.0, 0, {}, components=[Component("message.full", 40, hint)])
    exception.score, exception.message_points = total(exception.components), 40
    parts = [
        Component("message.log-line", 34, "pattern matches a whole log line"),
        Component("class.agrees", CLASS_AGREES, "logged at level WARNING"),
    ]
    logged = Match("b" * 16, total(parts), None, {}, components=list(parts), logged=True)
    raised_in_log = Match("c" * 16, 60.0, None, {}, components=[Component("x", 60, "x")])
    exceptions_first([exception, logged, raised_in_log], lambda *_: False, _none_foreign)
    assert logged.score == 40 - FRAMES_MARGIN == total(logged.components)
    assert logged.components[-1].id == "rank.below-exception"
    assert raised_in_log.score == 60  # only log sites' records are context
    alone = Match("d" * 16, total(parts), None, {}, components=list(parts), logged=True)
    exceptions_first([alone], lambda *_: False, _none_foreign)
    assert alone.score == 49


def _none_foreign(_key: str) -> bool:
    """Every record is of a project the paste names (or it names none)."""
    return False


def _log_line_match(key: str, line: str, score: float, **captures: str) -> Match:
    parts = [Component("message.log-line", 34, "pattern matches a whole log line")]
    match = Match(key * 16, score, None, dict(captures), components=parts, logged=True)
    match.log_line = line
    return match


def _raise_in_log_line(key: str, line: str, literal: int) -> Match:
    parts = [Component("message.in-log-line", 8, "pattern found in a log line")]
    match = Match(key * 16, 8.0, None, {}, components=parts)
    match.message_points, match.literal, match.log_line = 8, literal, line
    return match


def test_a_generic_raise_in_another_log_line_does_not_push_a_log_line_record_down() -> None:
    """SGLang's `max_total_tokens=... is larger than the profiled value ...` warning, pasted
    under `Load weight end. type=..., dtype=torch.bfloat16`: a raise's `dtype={dtype}` is
    words of a line no raise printed, so the warning's record keeps its place; a specific
    raise message in a log line is one the log shows, and the warning's record goes below."""
    warning = "max_total_tokens=131072 is larger than the profiled value -561981."
    loaded = "Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16"
    logged = _log_line_match("a", warning, 54.0)
    exceptions_first(
        [logged, _raise_in_log_line("b", loaded, literal=6)], lambda *_: False, _none_foreign
    )
    assert logged.score == 54.0
    specific = _raise_in_log_line("c", loaded, literal=40)
    exceptions_first([logged, specific], lambda *_: False, _none_foreign)
    assert logged.components[-1].id == "rank.below-exception"
    assert logged.score < specific.score


def test_a_generic_raise_in_a_value_of_a_logged_line_is_shown_by_the_log() -> None:
    """vLLM's `Exception in worker ... while processing method init_device: {e}` around
    pynccl's `NCCL error: {error}`: the raise's message is the value the log site's record
    captures, so the raise is what the paste shows, however short its template."""
    nccl = "NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    line = f"Exception in worker VllmWorkerProcess while processing method init_device: {nccl}"
    wrapper = _log_line_match("a", line, 64.0, e=nccl)
    raised = _raise_in_log_line("b", line, literal=12)

    def found(key: str, text: str, whole: bool) -> bool:
        return key == raised.id and not whole and text.startswith("NCCL error: ")

    exceptions_first([wrapper, raised], found, _none_foreign)
    assert wrapper.components[-1].id == "rank.below-exception"
    assert wrapper.score < raised.score


def test_a_raise_of_a_project_the_paste_does_not_name_is_not_shown_by_its_log_line() -> None:
    """SGLang's `Ignore import error when loading sglang.srt.models.glm_ocr: No module named
    '...'` in an SGLang log: vLLM's copy of the interpreter's words lies in the value the
    log site captures, yet the paste names SGLang only, so SGLang's log record keeps its
    place; the same raise of a project the paste names goes first."""
    error = "No module named 'transformers.models.glm_ocr'"
    line = f"Ignore import error when loading sglang.srt.models.glm_ocr: {error}"
    logged = _log_line_match("a", line, 34.0, name="sglang.srt.models.glm_ocr", e=error)
    raised = _raise_in_log_line("b", line, literal=17)
    raised.score = 12.0

    def found(key: str, text: str, whole: bool) -> bool:
        return key == raised.id and not whole and text == error

    exceptions_first([logged, raised], found, lambda key: key == raised.id)
    assert logged.score == 34.0
    exceptions_first([logged, raised], found, _none_foreign)
    assert logged.components[-1].id == "rank.below-exception"
    assert logged.score < raised.score


def test_the_match_page_shows_how_the_score_adds_up(client: TestClient) -> None:
    page = client.post("/match", data={"text": PASTES["traceback"]})
    assert page.status_code == 200
    assert "How the score adds up" in page.text
    assert "<code>frames.innermost</code>" in page.text
    assert f"ranking {RANKING_VERSION}" in page.text


def test_openapi_documents_the_components_and_the_ranking_version(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert "rankingVersion" in schemas["MatchResult"]["required"]
    components = schemas["MatchOut"]["properties"]["components"]
    assert components["items"] == {"$ref": "#/components/schemas/ScoreComponent"}
    assert "components" in schemas["MatchOut"]["required"]
    assert set(schemas["ScoreComponent"]["required"]) == {"id", "points", "hint"}
    batch = schemas["BatchResult"]["properties"]["results"]["items"]
    assert batch == {"$ref": "#/components/schemas/MatchResult"}


# What the real-paste measure calls a confident answer: half a perfect match.
CONFIDENT = 50.0
ROPE_SCALING = (
    "`rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {rope_scaling}"
)
TRANSFORMERS_LLAMA = "src/transformers/models/llama/configuration_llama.py"


def _records(folder: Path, *records: dict) -> list[Path]:
    """Record files to import, one a record."""
    paths = []
    for record in records:
        path = folder / f"{record['id']}.json"
        path.write_text(json.dumps(record), encoding="utf-8")
        paths.append(path)
    return paths


def _site(number: int, template: str, error_class: str, repo: str, file_path: str) -> dict:
    """A record raising `template` ({name} placeholders) at a site of `repo`."""
    pattern = re.sub(r"\\\{\w+\\\}", "(.+)", re.escape(template))
    return make_record(
        number,
        template,
        messagePattern=pattern,
        errorClass=error_class,
        repo=repo,
        filePath=file_path,
    )


def _match(client: TestClient, text: str, record_id: str) -> dict:
    body = client.post("/api/match", json={"text": text}, params={"limit": 10}).json()
    [found] = [match for match in body["matches"] if match["id"] == record_id]
    return found


def test_a_paste_without_a_class_neither_agrees_nor_differs(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A real paste of a message alone, in backticks (no class in front): the class says
    nothing, so it scores as the same message with its class less the class's points."""
    paste = case("torch-011-reinit-cuda-forked-noclass.json")["paste"]
    message = paste.strip().strip("`")
    record = _site(1, message, "RuntimeError", "pytorch/pytorch", "torch/cuda/__init__.py")
    client = make_client(*_records(tmp_path, record))
    alone = _match(client, paste, record["id"])
    points = {part["id"]: part["points"] for part in alone["components"]}
    assert points["class.unknown"] == 0
    assert "class.differs" not in points
    with_class = _match(client, f"RuntimeError: {message}\n", record["id"])
    assert alone["score"] == with_class["score"] - CLASS_AGREES


def test_a_record_elsewhere_than_where_the_paste_raised_is_only_a_possibility(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A real vLLM log whose ValueError transformers raised: SGLang's copy of the message
    (configs/nanbeige.py) is in no frame, so it is no confident answer; the record of the
    raising file is."""
    paste = case("vllm-121-transformers-rope-scaling-runpod.json")["paste"]
    copy = _site(
        1, ROPE_SCALING, "ValueError", "sgl-project/sglang", "python/sglang/srt/configs/nanbeige.py"
    )
    raiser = _site(2, ROPE_SCALING, "ValueError", "huggingface/transformers", TRANSFORMERS_LLAMA)
    only_copy = make_client(*_records(tmp_path, copy))
    elsewhere = _match(only_copy, paste, copy["id"])
    points = {part["id"]: part["points"] for part in elsewhere["components"]}
    assert points["frames.raised-elsewhere"] == RAISED_ELSEWHERE
    assert elsewhere["components"][0]["points"] == FULL_MESSAGE  # the same text in full
    assert elsewhere["score"] < CONFIDENT
    (tmp_path / "both").mkdir()
    both = make_client(*_records(tmp_path / "both", copy, raiser))
    top = both.post("/api/match", json={"text": paste}).json()["matches"][0]
    assert top["id"] == raiser["id"]
    assert top["score"] >= CONFIDENT
    assert "frames.raised-elsewhere" not in {part["id"] for part in top["components"]}


SITE_PACKAGES = "/usr/lib/python3.11/site-packages"


def _tokenizer_paste(innermost_line: str) -> str:
    """A vLLM log whose AttributeError comes from the innermost frame, transformers'
    `__getattr__`, under vLLM's tokenizer code."""
    return (
        f'(APIServer pid=7)   File "{SITE_PACKAGES}/vllm/transformers_utils/tokenizer.py", line 99,'
        " in get_cached_tokenizer\n"
        "(APIServer pid=7)     tokenizer.all_special_tokens_extended)\n"
        f'(APIServer pid=7)   File "{SITE_PACKAGES}/transformers/tokenization_utils_base.py", '
        "line 1293, "
        "in __getattr__\n"
        f"(APIServer pid=7)     {innermost_line}\n"
        "(APIServer pid=7) AttributeError: Qwen2Tokenizer has no attribute "
        "all_special_tokens_extended\n"
    )


def test_a_record_in_a_frame_above_a_library_that_raised_is_only_a_possibility(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """The innermost frame makes the exception (`raise AttributeError(...)`) in a library (or
    another file) the record's file calls: the record's file is in a frame, but its line only
    called into that code, so a record of like words there is no confident answer. Where the
    innermost line makes nothing (a re-raise), the frame in the record's file is not judged
    so."""
    record = _site(
        1,
        "{name} has no attribute {key}",
        "AttributeError",
        "vllm-project/vllm",
        "vllm/transformers_utils/tokenizer.py",
    )
    client = make_client(*_records(tmp_path, record))
    made = 'raise AttributeError(f"{self.__class__.__name__} has no attribute {key}")'
    below = _match(client, _tokenizer_paste(made), record["id"])
    points = {part["id"]: part["points"] for part in below["components"]}
    assert points["frames.file"] > 0
    assert points["frames.raised-below"] < 0
    assert below["score"] < CONFIDENT
    library = f"{SITE_PACKAGES}/transformers/tokenization_utils_base.py"
    own = _tokenizer_paste(made).replace(library, f"{SITE_PACKAGES}/vllm/tokenizers/base.py")
    assert "frames.raised-below" in {
        part["id"] for part in _match(client, own, record["id"])["components"]
    }  # another file of the same project made it
    passed_on = _match(client, _tokenizer_paste("raise"), record["id"])
    assert "frames.raised-below" not in {part["id"] for part in passed_on["components"]}
    assert passed_on["score"] >= CONFIDENT
    cut = _tokenizer_paste(made).replace(f'"{library}"', '"tokenizer.py"')  # cut to its name
    mine = _match(client, cut, record["id"])
    assert "frames.raised-below" not in {part["id"] for part in mine["components"]}


LEAK = "token_to_kv_pool_allocator memory leak detected! {token_msg}"
LEAK_CALLER = "python/sglang/srt/managers/scheduler_runtime_checker_mixin.py"


def _leak_site(number: int, raise_line: str) -> dict:
    """SGLang's memory-leak message at line 163 of its caller, raised there by `raise_line`."""
    return {
        **_site(number, LEAK, "ValueError", "sgl-project/sglang", LEAK_CALLER),
        "lineNumber": 163,
        "sourceCode": '            msg = "token_to_kv_pool_allocator memory leak detected! "'
        f' f"{{token_msg}}"\n{raise_line}\n                self,',
        "sourceCodeStart": 162,
        "sourceCodeEnd": 164,
    }


def test_a_message_raised_by_the_helper_its_site_calls_is_not_raised_elsewhere(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A real paste whose innermost frame is SGLang's raising helper (`raise_error_or_warn`,
    in utils/common.py) and whose caller's frame is cut: the record of the caller's site,
    which calls that helper with the message, is the confident answer; a record whose site
    raises the message itself there is still at most a copy."""
    paste = case("sglang-023-kv-pool-leak-mamba-raise-error-or-warn.json")["paste"]
    caller = _leak_site(1, "            raise_error_or_warn(")
    client = make_client(*_records(tmp_path, caller))
    found = _match(client, paste, caller["id"])
    points = {part["id"]: part["points"] for part in found["components"]}
    assert points["frames.helper"] == FILE_INNERMOST
    assert "frames.raised-elsewhere" not in points
    assert found["score"] >= CONFIDENT
    (tmp_path / "copy").mkdir()
    copy = _leak_site(2, "            raise ValueError(msg)")
    elsewhere = _match(make_client(*_records(tmp_path / "copy", copy)), paste, copy["id"])
    points = {part["id"]: part["points"] for part in elsewhere["components"]}
    assert points["frames.raised-elsewhere"] == RAISED_ELSEWHERE
    assert "frames.raised-below" in points  # the helper it does not call made the exception
    assert elsewhere["score"] < CONFIDENT <= found["score"]


def test_a_worker_error_re_raised_by_the_standard_library_is_not_raised_elsewhere(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """multiprocessing re-raises a worker's exception in the parent: the innermost frame is
    the standard library's, which makes no exception of its own."""
    message = "Cannot re-initialize CUDA in forked subprocess"
    record = _site(1, message, "RuntimeError", "pytorch/pytorch", "torch/cuda/__init__.py")
    client = make_client(*_records(tmp_path, record))
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/run.py", line 9, in <module>\n'
        "    pool.map(work, range(4))\n"
        '  File "/usr/lib/python3.10/multiprocessing/pool.py", line 771, in get\n'
        "    raise self._value\n"
        f"RuntimeError: {message}\n"
    )
    found = _match(client, paste, record["id"])
    assert "frames.raised-elsewhere" not in {part["id"] for part in found["components"]}


def test_a_whole_message_match_is_not_put_below_a_located_record_of_another_message() -> None:
    """The frames locate a record whose template does not fit the message (the site raised
    something else in another release); a record whose pattern matches the whole message
    outranks it, and is not put below it."""
    site = Component("site.raised-here-other-message", 14, "raised at the record's site")
    located = Match("a" * 16, 0.0, 0, {}, components=[site, Component("frames.file", 12, "")])
    located.score, located.in_frames, located.message_points = total(located.components), True, 14
    hint = "pattern matches the whole exception message"
    parts = [Component("message.full", FULL_MESSAGE, hint), Component("class.agrees", 15, "")]
    literal = Match("b" * 16, total(parts), 0, {}, components=parts)
    literal.message_points = FULL_MESSAGE
    frames_first([located, literal])
    assert literal.score == FULL_MESSAGE + 15 > located.score
    assert "rank.below-frames" not in {part.id for part in literal.components}


def test_a_helper_raising_any_message_ranks_below_the_caller_whose_text_matches() -> None:
    """The whole-history store: SGLang's `raise_error_or_warn` raises `ValueError(message)` at
    the innermost frame's very line in one release (a `{message}` record, no literal text,
    86 points), and the caller's record matches the whole memory-leak message (80 points):
    the caller's record comes first, and the helper's score still adds up."""
    site = Component("site.raised-here-dynamic", 30, "raised at the record's site")
    helper = Match("a" * 16, 0.0, 0, {}, components=[site, Component("frames.line", 56, "")])
    helper.score, helper.in_frames = total(helper.components), True
    parts = [Component("message.full", FULL_MESSAGE, ""), Component("class.agrees", 40, "")]
    caller = Match("b" * 16, total(parts), 0, {}, components=parts, literal=40)
    caller.message_points = FULL_MESSAGE
    literal_before_helpers([helper, caller])
    assert helper.score == caller.score - FRAMES_MARGIN == total(helper.components)
    assert "rank.below-literal" in {part.id for part in helper.components}
    assert "rank.below-literal" not in {part.id for part in caller.components}


HEADS = (
    "Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})."
)
HEADS_PATTERN = (
    r"Total number of attention heads \((.+?)\) must be divisible by tensor parallel size "
    r"\((.+?)\)\."
)


def _heads_site(record_id: str, file_path: str, releases: set[str], gone: bool) -> Candidate:
    """One site of vLLM's attention-heads check: vllm/config.py up to 0.10, the config
    package's parallel.py since."""
    return Candidate(
        id=record_id,
        repo=VLLM,
        error_class="ValueError",
        error_message=HEADS,
        file_path=file_path,
        line_number=300,
        lines={300: ""},
        functions=frozenset({"verify_with_parallel_config"}),
        reviewed=False,
        gone=gone,
        files=frozenset({file_path}),
        template=message_template(HEADS_PATTERN, HEADS),
        releases=frozenset(releases),
    )


def test_a_release_the_paste_names_picks_the_site_it_raises_from() -> None:
    """The same message from two files of two release ranges: nothing in a bare line tells
    which, so both are one answer (the current site first); a release the paste names picks
    that release's site, and the answer says so."""
    old = _heads_site("0" * 16, "vllm/config.py", {"vllm==0.5.5", "vllm==0.6.6.post1"}, True)
    new = _heads_site("1" * 16, "vllm/config/parallel.py", {"vllm==0.12.0", "vllm==0.33.0"}, False)
    sites = {site.id: site for site in (old, new)}
    index = PatternIndex([(old.id, HEADS_PATTERN), (new.id, HEADS_PATTERN)])
    line = "ValueError: " + HEADS.format(heads=52, tp=8) + "\n"

    def answer(text: str) -> list[Match]:
        return find_matches(index, text, lambda ids: {i: sites[i] for i in ids})[1]

    alone = answer(line)
    assert [(m.id, m.same_message) for m in alone] == [(new.id, [old.id])]
    named = answer("INFO 10-22 12:00:01 api_server.py:527] vLLM API server version 0.6.3\n" + line)
    assert [m.id for m in named] == [old.id, new.id]
    assert named[0].same_message == []
    assert "the paste names vllm 0.6.3, whose site this is (0.5.5–0.6.6.post1)" in named[0].reasons
    assert "release.differs" in {part.id for part in named[1].components}
    newer = answer("INFO 10-22 12:00:01 api_server.py:527] vLLM API server version 0.34.0\n" + line)
    assert newer[0].id == new.id


def test_a_curated_site_leads_the_same_message_from_an_older_file() -> None:
    """A curator's bonus says nothing of the release a paste came from: the current site,
    curated, and the older release's file of the same message are one answer, the curated
    record first, unless the paste names a release."""
    old = _heads_site("0" * 16, "vllm/config.py", {"vllm==0.5.5", "vllm==0.6.6.post1"}, True)
    curated = replace(
        _heads_site("1" * 16, "vllm/config/model.py", {"vllm==0.33.0"}, False), reviewed=True
    )
    sites = {site.id: site for site in (old, curated)}
    index = PatternIndex([(old.id, HEADS_PATTERN), (curated.id, HEADS_PATTERN)])
    line = "ValueError: " + HEADS.format(heads=52, tp=8) + "\n"

    def answer(text: str) -> list[Match]:
        return find_matches(index, text, lambda ids: {i: sites[i] for i in ids})[1]

    alone = answer(line)
    assert [(m.id, m.same_message) for m in alone] == [(curated.id, [old.id])]
    named = answer("INFO 10-22 12:00:01 api_server.py:527] vLLM API server version 0.6.3\n" + line)
    assert named[0].id == old.id
    assert named[0].same_message == []


def test_a_bare_exception_over_a_refined_class_neither_agrees_nor_differs() -> None:
    """torch raised `Exception("process 3 terminated with signal SIGKILL")` before it
    refined the class to ProcessExitedException: a pasted root class tells nothing."""
    message = "process {error_index} terminated with signal {name}"
    pattern = r"process (.+?) terminated with signal (.+?)"
    spawn = Candidate(
        id="2" * 16,
        repo="pytorch/pytorch",
        error_class="ProcessExitedException",
        error_message=message,
        file_path="torch/multiprocessing/spawn.py",
        line_number=192,
        lines={192: ""},
        functions=frozenset({"join"}),
        reviewed=False,
        gone=False,
        files=frozenset({"torch/multiprocessing/spawn.py"}),
        template=message_template(pattern, message),
    )
    graph = class_graph_of(
        [("ProcessExitedException", ["ProcessException"]), ("ProcessException", ["Exception"])]
    )
    index = PatternIndex([(spawn.id, pattern)])
    for pasted, component in [("Exception", "class.root"), ("KeyError", "class.differs")]:
        text = f"{pasted}: process 3 terminated with signal SIGKILL\n"
        (found,) = find_matches(index, text, lambda ids: dict.fromkeys(ids, spawn), graph=graph)[1]
        parts = {part.id: part.points for part in found.components}
        assert parts[component] == (0 if component == "class.root" else CLASS_DIFFERS)


def _torch_site(
    record_id: str,
    error_class: str,
    message: str,
    pattern: str,
    path: str,
    line: int,
    function: str,
) -> Candidate:
    """A draft of torch's raised at one line of one function."""
    return Candidate(
        id=record_id,
        repo="pytorch/pytorch",
        error_class=error_class,
        error_message=message,
        file_path=path,
        line_number=line,
        lines={line: ""},
        functions=frozenset({function}),
        reviewed=False,
        gone=False,
        files=frozenset({path}),
        template=message_template(pattern, message),
    )


def test_a_generic_template_without_a_frame_in_its_file_is_a_possibility_only() -> None:
    """`CUDA error: {error_message}` fits every CUDA error, most raised by the driver under
    whatever called it: a bare line is no more than a possibility; a frame in its file makes
    it the answer."""
    message, pattern = "CUDA error: {error_message}", r"CUDA error: (?P<error_message>.+?)"
    record = _torch_site(
        "3" * 16, "RuntimeError", message, pattern, "torch/cuda/_utils.py", 225, "_check_cuda"
    )
    index = PatternIndex([(record.id, pattern)])
    line = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    frame = (
        "Traceback (most recent call last):\n"
        '  File "/venv/site-packages/torch/cuda/_utils.py", line 225, in _check_cuda\n'
        "    raise RuntimeError(f'CUDA error: {error_message}')\n"
    )
    (bare,) = find_matches(index, line, lambda ids: dict.fromkeys(ids, record))[1]
    (framed,) = find_matches(index, frame + line, lambda ids: dict.fromkeys(ids, record))[1]
    assert "message.generic" in {part.id for part in bare.components}
    assert bare.score < 50 <= framed.score
    assert "message.generic" not in {part.id for part in framed.components}


def test_a_message_in_the_interpreters_words_is_a_possibility_only() -> None:
    """torch raises its own copy of the interpreter's wrong-call message: a bare
    `EngineArgs.__init__() got an unexpected keyword argument 'x'` is Python's, raised at the
    call, so torch's site is no more than a possibility."""
    message = "{name}.__init__() got an unexpected keyword argument '{key}'"
    pattern = r"(.+?)\.__init__\(\) got an unexpected keyword argument '(.+?)'"
    record = _torch_site(
        "4" * 16, "TypeError", message, pattern, "torch/nn/modules/module.py", 488, "__init__"
    )
    index = PatternIndex([(record.id, pattern)])
    text = "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'enable_lora_x'\n"
    (found,) = find_matches(index, text, lambda ids: dict.fromkeys(ids, record))[1]
    assert "message.generic" in {part.id for part in found.components}
    assert found.score < 50


def test_the_import_systems_words_are_a_possibility_only() -> None:
    """torch.package raises its own copy of the import system's message: a user's `vllm.py`
    shadowing the package (`No module named 'vllm.engine'; 'vllm' is not a package`) is
    Python's import failing, so torch's site is no more than a possibility; its frames in
    torch's file still name it."""
    message = "No module named '{name}'; '{parent}' is not a package"
    pattern = r"No module named '(.+?)'; '(.+?)' is not a package"
    record = _torch_site(
        "5" * 16,
        "ModuleNotFoundError",
        message,
        pattern,
        "torch/package/package_importer.py",
        513,
        "_gcd_import",
    )
    index = PatternIndex([(record.id, pattern)])
    line = "ModuleNotFoundError: No module named 'vllm.engine'; 'vllm' is not a package\n"
    user = 'Traceback (most recent call last):\n  File "/root/vllm.py", line 91, in __enter__\n'
    (found,) = find_matches(index, user + line, lambda ids: dict.fromkeys(ids, record))[1]
    assert "message.generic" in {part.id for part in found.components}
    assert found.score < 50
    torch_frame = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/torch/package/package_importer.py", '
        "line 513, in _gcd_import\n"
    )
    (found,) = find_matches(index, torch_frame + line, lambda ids: dict.fromkeys(ids, record))[1]
    assert "message.generic" not in {part.id for part in found.components}
    assert found.score >= 50


def test_the_frames_site_with_a_near_message_wins_over_a_copy_raised_elsewhere() -> None:
    """A real paste raised at vLLM's bitsandbytes.py with `bitsandbytes>=0.44.0`: the harvested
    site there says `>=0.45.0`, and loader.py (no frame is in it) says `>=0.44.0` word for
    word. The full match elsewhere does not stop the near match at the frames' site, which
    comes first."""
    text = case("vllm-157-bitsandbytes-not-installed-sglang-frames.json")["paste"]
    said = (
        "Please install bitsandbytes>={v} via `pip install bitsandbytes>={v}` to use "
        "bitsandbytes quantizer."
    )
    sites = {
        record.id: replace(record, repo=VLLM)
        for record in (
            _torch_site(
                "5" * 16,
                "ImportError",
                said.format(v="0.44.0"),
                re.escape(said.format(v="0.44.0")),
                "vllm/model_executor/model_loader/loader.py",
                789,
                "_prepare_weights",
            ),
            _torch_site(
                "6" * 16,
                "ImportError",
                said.format(v="0.45.0"),
                re.escape(said.format(v="0.45.0")),
                "vllm/model_executor/layers/quantization/bitsandbytes.py",
                162,
                "__init__",
            ),
        )
    }
    index = PatternIndex([(key, re.escape(site.error_message)) for key, site in sites.items()])
    first, second = find_matches(index, text, lambda ids: {i: sites[i] for i in ids})[1]
    assert (first.id, second.id) == ("6" * 16, "5" * 16)
    assert "message.near" in {part.id for part in first.components}
    assert "frames.raised-elsewhere" in {part.id for part in second.components}


TRANSFORMERS_CONFIGS = [
    TRANSFORMERS_LLAMA,
    "src/transformers/models/mistral/configuration_mistral.py",
    "src/transformers/models/qwen2/configuration_qwen2.py",
]


def test_records_sharing_a_message_cost_what_one_does(
    make_client: Callable[..., TestClient], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real paste, and a near copy of it (a word of the message changed), against one
    record of its message and against three (the message raised in three files, as many
    releases repeat one): each record sharing the pattern is matched and scored, yet the
    pattern is searched for, matched and compared with the message no more often than for
    one record (those raised elsewhere go together, under the first of them). On the
    whole-history store most messages are shared by many records."""
    paste = case("vllm-121-transformers-rope-scaling-runpod.json")["paste"]
    near = paste.replace("must be a dictionary with two", "must be a dict with two")
    work: dict[str, int] = {}

    def counted(name: str, function: Callable) -> Callable:
        def call(*args: object, **kwargs: object) -> object:
            work[name] = work.get(name, 0) + 1
            return function(*args, **kwargs)

        return call

    confirm = PatternIndex._confirm
    monkeypatch.setattr(PatternIndex, "_confirm", staticmethod(counted("search", confirm)))
    monkeypatch.setattr(PatternIndex, "match", counted("match", PatternIndex.match))
    monkeypatch.setattr(partial, "_agreement", counted("compare", partial._agreement))
    spent = {}
    for count in (1, 3):
        sites = [
            _site(number, ROPE_SCALING, "ValueError", "huggingface/transformers", path)
            for number, path in enumerate(TRANSFORMERS_CONFIGS[:count], 1)
        ]
        (tmp_path / str(count)).mkdir()
        client = make_client(*_records(tmp_path / str(count), *sites))
        for text in (paste, near):
            client.post("/api/match", json={"text": text})  # what a first match computes once
            work.clear()
            body = client.post("/api/match", json={"text": text}, params={"limit": 10}).json()
            spent[count, text] = dict(work)
            found = {match["id"]: match for match in body["matches"]}
            alike = {same["id"] for match in body["matches"] for same in match["sameMessage"]}
            assert set(found) | alike == {site["id"] for site in sites}
            assert found[sites[0]["id"]]["score"] >= CONFIDENT  # raised in the pasted file
    assert spent[1, paste]["search"] == spent[1, near]["search"] == 1
    assert spent[1, near]["compare"] >= 1
    assert spent[3, paste] == spent[1, paste]
    assert spent[3, near] == spent[1, near]


QUANTIZATION = (
    "The quantization method {method} is not supported for the current GPU. Minimum "
    "capability: {minimum}. Current capability: {current}."
)


def test_a_paste_that_names_its_project_gets_no_likely_answer_from_another(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A vLLM log line (its prefix names vLLM) of a message SGLang raises in the same words:
    SGLang's record is a possibility only, vLLM's likely; without a clue of the project,
    both stay as they scored."""
    message = QUANTIZATION.format(method="fp8", minimum=80, current=75)
    vllm = _site(
        1, QUANTIZATION, "ValueError", "vllm-project/vllm", "vllm/model_executor/model_loader.py"
    )
    sglang = _site(
        2, QUANTIZATION, "ValueError", "sgl-project/sglang", "python/sglang/srt/model_loader.py"
    )
    client = make_client(*_records(tmp_path, vllm, sglang))
    bare = f"ValueError: {message}\n"
    [top] = client.post("/api/match", json={"text": bare}).json()["matches"]
    assert top["score"] >= LIKELY  # one answer: the same message raised in both projects
    assert {top["id"], *(other["id"] for other in top["sameMessage"])} == {vllm["id"], sglang["id"]}
    logged = f"ERROR 08-14 12:00:01 [core.py:710] ValueError: {message}\n"
    other = _match(client, logged, sglang["id"])
    assert other["score"] < LIKELY
    assert "repo.not-named" in {part["id"] for part in other["components"]}
    _assert_adds_up(other)
    assert _match(client, logged, vllm["id"])["score"] >= LIKELY


def test_a_library_s_own_words_in_another_record_are_a_possibility_only(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """argparse's `unrecognized arguments` pasted alone: a record that holds the same words
    (here a vLLM site) is no likely answer, and the reply says argparse raised it."""
    template = "{prog}: error: unrecognized arguments: {arguments}"
    record = _site(1, template, "SystemExit", "vllm-project/vllm", "vllm/utils/argparse.py")
    client = make_client(*_records(tmp_path, record))
    paste = "api_server.py: error: unrecognized arguments: --enable-reasoning\n"
    body = client.post("/api/match", json={"text": paste}).json()
    assert [exception["raisedBy"] for exception in body["exceptions"]] == ["argparse"]
    found = _match(client, paste, record["id"])
    assert found["score"] < LIKELY
    assert "message.library" in {part["id"] for part in found["components"]}
    _assert_adds_up(found)


def test_the_same_logged_message_of_two_files_is_one_answer(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """SGLang logs its NaN warning from the sampler and from the EAGLE worker: a pasted
    line names neither, so both are one answer."""
    message = "Detected errors during sampling! NaN in the logits."
    sites = [
        {**_site(number, message, "WARNING", "sgl-project/sglang", path), "errorType": "log"}
        for number, path in (
            (1, "python/sglang/srt/layers/sampler.py"),
            (2, "python/sglang/srt/speculative/eagle_worker.py"),
        )
    ]
    client = make_client(*_records(tmp_path, *sites))
    paste = f"[2025-01-01 10:00:00 TP0] {message}\n"
    [top] = client.post("/api/match", json={"text": paste}).json()["matches"]
    assert {top["id"], *(other["id"] for other in top["sameMessage"])} == {
        site["id"] for site in sites
    }


def test_a_warning_pasted_alone_is_not_put_below_a_generic_templates_words_in_it(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """A vLLM warning pasted alone under a sentence of prose (no level, no class): its log
    site's record fits the whole message; a raise whose generic template (`{name} is not
    available`) is only found in part of it shows no raise to rank that record below."""
    message = (
        "FlashInfer is not available. Falling back to the PyTorch-native implementation of "
        "top-p & top-k sampling."
    )
    warning = {
        **_site(1, message, "WARNING", "vllm-project/vllm", "vllm/v1/sample/ops/topk.py"),
        "errorType": "log",
    }
    generic = _site(2, "{name} is not available", "ValueError", "pytorch/pytorch", "torch/x.py")
    client = make_client(*_records(tmp_path, warning, generic))
    paste = f"This warning shows at startup, investigate.\n\n{message}\n"
    top = client.post("/api/match", json={"text": paste}).json()["matches"][0]
    assert top["id"] == warning["id"]
    assert "rank.below-exception" not in {part["id"] for part in top["components"]}


def test_a_message_cut_short_is_one_answer_with_every_template_it_agrees_with(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    """An issue's title keeps the first line of SGLang's `Capture cuda graph failed: {e}`,
    whose advice below differs from file to file: the title agrees with each as far as it
    goes, so they are one answer, whatever share of each template it shows."""
    head = "Capture cuda graph failed: {e}"
    tails = (
        ". Possible solutions:\n1. disable cuda graph by --disable-cuda-graph",
        "\nPossible solutions:\n1. disable cuda graph by --disable-cuda-graph\n"
        "2. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    )
    sites = []
    for number, (tail, path) in enumerate(
        zip(
            tails,
            ("managers/controller/model_runner.py", "model_executor/cuda_graph_runner.py"),
            strict=True,
        ),
        start=1,
    ):
        template = head + tail
        pattern = re.escape(template).replace(re.escape("{e}"), "(?P<e>(?s:.+?))")
        site = _site(
            number, template, "Exception", "sgl-project/sglang", f"python/sglang/srt/{path}"
        )
        sites.append({**site, "messagePattern": pattern})
    client = make_client(*_records(tmp_path, *sites))
    title = "[Bug] Exception: Capture cuda graph failed: Triton Error [CUDA]: device kernel image"
    # ending in a period, the title covers one more literal character of the first template
    for paste in (title, title + " is invalid."):
        top = client.post("/api/match", json={"text": paste}).json()["matches"][0]
        assert top["components"][0]["id"] == "message.cut"
        assert {top["id"], *(other["id"] for other in top["sameMessage"])} == {
            site["id"] for site in sites
        }


def test_an_error_that_points_at_the_cause_above_ranks_below_the_cause_shown() -> None:
    """vLLM's EngineDeadError says only `See stack trace (above) for the root cause.`: where
    the paste shows that error (a LoRA's wrong target modules), its record leads; where it
    shows nothing else, the EngineDeadError's record is the answer."""
    dead = "EngineCore encountered an issue. See stack trace (above) for the root cause."
    lora = "expected target modules in {expected} but received {received}"
    patterns = {
        "6" * 16: re.escape(dead),
        "7" * 16: "expected target modules in (.+?) but received (.+)",
    }
    sites = {
        "6" * 16: ("EngineDeadError", dead, "vllm/v1/engine/core_client.py", "shutdown"),
        "7" * 16: ("ValueError", lora, "vllm/lora/models.py", "from_local_checkpoint"),
    }
    records = {
        key: replace(
            _torch_site(key, error_class, message, patterns[key], path, 100, function),
            repo="vllm-project/vllm",
            reviewed=error_class == "EngineDeadError",  # curated, as vLLM's is
        )
        for key, (error_class, message, path, function) in sites.items()
    }
    index = PatternIndex(list(patterns.items()))
    shown = (
        "ValueError: expected target modules in ['q_proj', 'v_proj'] but received ['mlp1.1']\n"
        "...\n"
        f"vllm.v1.engine.exceptions.EngineDeadError: {dead}\n"
    )
    first = find_matches(index, shown, lambda ids: {i: records[i] for i in ids})[1][0]
    assert first.id == "7" * 16
    alone = f"vllm.v1.engine.exceptions.EngineDeadError: {dead}\n"
    first = find_matches(index, alone, lambda ids: {i: records[i] for i in ids})[1][0]
    assert first.id == "6" * 16


def test_a_warning_put_at_its_callers_line_is_not_raised_elsewhere() -> None:
    """`warnings.warn(..., stacklevel=2)` prints the caller's file and line: torch's
    `TypedStorage is deprecated` warning names the user's `tensorlist.py:88`, where no
    raise of torch's could be, so its record is still likely."""
    message = "TypedStorage is deprecated. It will be removed in the future."
    pattern = re.escape(message)
    record = replace(
        _torch_site("8" * 16, "UserWarning", message, pattern, "torch/storage.py", 659, "_warn"),
        logged=True,
    )
    index = PatternIndex([(record.id, pattern)])
    paste = f"/home/u/site-packages/torchbiggraph/tensorlist.py:88: UserWarning: {message}\n"
    (found,) = find_matches(index, paste, lambda ids: dict.fromkeys(ids, record))[1]
    assert "frames.raised-elsewhere" not in {part.id for part in found.components}
    assert found.score >= LIKELY


def test_a_log_line_that_only_announces_a_cut_traceback_is_not_the_answer() -> None:
    """SGLang logs `Ignore import error when loading {name}. {e}`, then `Scheduler hit an
    exception: {traceback}`, and the paste ends inside that traceback: the second line says
    that something failed, not what, so the warning above it is the answer."""
    ignored = "Ignore import error when loading {name}. {e}"
    hit = "Scheduler hit an exception: {traceback}"
    patterns = {
        "a" * 16: r"Ignore import error when loading (?P<name>(?s:.+?))\. (?P<e>(?s:.+?))",
        "b" * 16: r"Scheduler hit an exception: (?P<traceback>(?s:.+?))",
    }
    sites = {
        "a" * 16: ("WARNING", ignored, "python/sglang/srt/models/registry.py"),
        "b" * 16: ("ERROR", hit, "python/sglang/srt/managers/scheduler.py"),
    }
    records = {
        key: replace(
            _torch_site(key, level, message, patterns[key], path, 100, "f"),
            repo="sgl-project/sglang",
            logged=True,
            gone=key == "a" * 16,  # its wording changed since, as SGLang's did
        )
        for key, (level, message, path) in sites.items()
    }
    index = PatternIndex(list(patterns.items()))
    paste = (
        "[2025-03-10 14:17:52 TP6] Ignore import error when loading "
        "sglang.srt.models.deepseek_v2. Command '['/usr/bin/gcc', '-lcuda']' returned 1.\n"
        "[2025-03-10 14:17:52 TP1] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/home/x/sglang/python/sglang/srt/managers/sche'
    )
    matches = find_matches(index, paste, lambda ids: {i: records[i] for i in ids})[1]
    assert matches[0].id == "a" * 16
    assert matches[0].components[0].id == "message.log-line"


def test_a_log_line_a_terminal_wrapped_matches_its_log_site_whole() -> None:
    """SGLang's MoE warning names a config file's long path, which a terminal wrapped at its
    column: joined again, the line is the log site's, values and all; a frame's indented
    line below a log line is never joined to it."""
    message = (
        "Using default MoE kernel config. Performance might be sub-optimal! Config file not "
        "found at {path}, you can create them with {url}"
    )
    pattern = (
        r"Using default MoE kernel config\. Performance might be sub-optimal! Config file not "
        r"found at (?P<path>(?s:.+?)), you can create them with (?P<url>(?s:.+?))"
    )
    record = replace(
        _torch_site("c" * 16, "WARNING", message, pattern, "sglang/srt/fused_moe.py", 9, "f"),
        repo="sgl-project/sglang",
        logged=True,
    )
    index = PatternIndex([(record.id, pattern)])
    paste = (
        "[2026-05-15 20:31:38] Using default MoE kernel config. Performance might be "
        "sub-optimal! Config file not found at /x/configs/E=384,N=14336,device_name=NVIDIA_\n"
        "RTX_PRO_6000.json, you can create them with https://github.com/sgl-project/sglang\n"
    )
    (found,) = find_matches(index, paste, lambda ids: dict.fromkeys(ids, record))[1]
    assert found.components[0].id == "message.log-line"
    assert found.captures["path"] == "/x/configs/E=384,N=14336,device_name=NVIDIA_RTX_PRO_6000.json"
    framed = paste.replace("\nRTX_PRO", "\n  RTX_PRO")
    unjoined = find_matches(index, framed, lambda ids: dict.fromkeys(ids, record))[1]
    assert not [match for match in unjoined if match.components[0].id == "message.log-line"]


def _decode_log_record(message: str) -> Candidate:
    where = "python/sglang/srt/disaggregation/decode.py"
    return Candidate(
        "d" * 16, "sgl-project/sglang", "ERROR", message, where, 1, {}, frozenset(),
        reviewed=False, gone=False, logged=True,
    )  # fmt: skip


def test_a_log_line_that_logs_another_error_is_a_possibility_only() -> None:
    """SGLang's `Decode transfer failed for request ... with exception {e}`: the value it
    logs is another error (`KVTransferError(...): ...`), whose raise is the answer; the log
    line's record says where it was caught, so it stays below LIKELY. A value that is no error
    keeps its place, as does a near fit of a template that logs no exception."""
    line = "Decode transfer failed for request rank=1 with exception KVTransferError(room=7): lost"
    parts = [Component("message.log-line", 54, "pattern matches a whole log line")]
    error = "KVTransferError(room=7): lost"
    wrapper = Match("d" * 16, 54.0, None, {"e": error}, components=list(parts), logged=True)
    wrapper.log_line = line
    candidates = {wrapper.id: _decode_log_record("... with exception {e}")}
    wrappers_below_likely([wrapper], candidates)
    assert wrapper.score < LIKELY
    assert wrapper.components[-1].id == "log.wraps-error"
    plain = Match("d" * 16, 54.0, None, {"e": "lost"}, components=list(parts), logged=True)
    plain.log_line = line
    wrappers_below_likely([plain], candidates)
    assert plain.score == 54.0
    near = Match("d" * 16, 54.0, 0, {}, components=list(parts), logged=True)
    wrappers_below_likely([near], candidates)
    assert near.score < LIKELY  # no value read: the template's `{e}` is a caught error
    near_plain = Match("d" * 16, 54.0, 0, {}, components=list(parts), logged=True)
    wrappers_below_likely([near_plain], {near_plain.id: _decode_log_record("... room {room}")})
    assert near_plain.score == 54.0


def test_torchs_copy_of_words_another_project_raised_is_a_possibility_only() -> None:
    """torch vendors flash-attention, so its library holds `FlashAttention only supports
    Ampere GPUs or newer.`; when c10 says flash-attn's own `flash_api.cpp` raised it, torch's
    record stays below LIKELY. Without that line it keeps its place."""
    parts = [Component("message.full", 56, "pattern matches the whole exception message")]
    copy = Match("e" * 16, 56.0, 0, {}, components=list(parts))
    library = Candidate(
        copy.id, "pytorch/pytorch", "Exception", "FlashAttention only supports Ampere GPUs "
        "or newer.", "torch/lib/libtorch_cuda.so", None, {}, frozenset(), reviewed=False,
        gone=False,
    )  # fmt: skip
    copies_below_likely([copy], {copy.id: library}, {})
    assert copy.score == 56.0
    copies_below_likely([copy], {copy.id: library}, {0: "x\\csrc\\flash_attn\\flash_api.cpp"})
    assert copy.score < LIKELY
    assert copy.components[-1].id == "native.raised-elsewhere"
    assert "flash_api.cpp" in copy.reasons[-1]


BF16 = "Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
BF16_OLD = (  # vLLM 0.5's worker.py
    BF16 + "{gpu_name} GPU has compute capability {compute_capability[0]}.{compute_capability[1]}.",
    re.escape(BF16) + r"(.+?) GPU has compute capability (.+?)\.(.+?)\.",
)
BF16_NEW = (  # the current platforms/cuda.py, curated, with a tail some releases print
    BF16 + "{gpu_name} GPU {compute_str}. You can use float16 instead.",
    re.escape(BF16) + r"(.+?) GPU (.+?)\.(?: You can use float16 instead\.)?",
)


def test_templates_a_near_copy_fits_alike_are_one_answer() -> None:
    """A message in markdown (`**ValueError: ...**`) is a near copy of each template of its
    site's releases: with the same words changed, nothing tells them apart, so they are one
    answer (the curated one first) as a whole message's would be, not the curated one alone."""
    sites = {}
    for number, (message, pattern), reviewed, gone in (
        (0, BF16_OLD, False, True),
        (1, BF16_NEW, True, False),
    ):
        site = _heads_site(str(number) * 16, f"vllm/site{number}.py", {"vllm==0.33.0"}, gone)
        sites[site.id] = replace(
            site,
            error_message=message,
            template=message_template(pattern, message),
            reviewed=reviewed,
        )
    old, new = sites
    index = PatternIndex([(old, BF16_OLD[1]), (new, BF16_NEW[1])])
    text = "  **ValueError: " + BF16 + "Tesla V100-SXM2-32GB GPU has compute capability 7.0.**\n"
    matches = find_matches(index, text, lambda ids: {i: sites[i] for i in ids})[1]
    assert matches[0].components[0].id == "message.near"
    assert [(m.id, m.same_message) for m in matches] == [(new, [old])]


def test_a_compiled_librarys_message_under_python_frames_is_not_raised_elsewhere() -> None:
    """A message literal read from `libtorch_cpu.so` (the library names no source file) is
    raised in native code that the Python frames call into, as a `.cpp` site's is: no
    Python frame is ever in the library, so it is no copy raised elsewhere."""
    message = "The server socket has failed to listen on any local network address."
    pattern = re.escape(message)
    record = _torch_site(
        "9" * 16, "Exception", message, pattern, "torch/lib/libtorch_cpu.so", 0, ""
    )
    index = PatternIndex([(record.id, pattern)])
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/torch/distributed/rendezvous.py", line 189, '
        "in _create_c10d_store\n"
        "    return TCPStore(\n"
        f"torch.distributed.DistNetworkError: {message}\n"
    )
    (found,) = find_matches(index, paste, lambda ids: dict.fromkeys(ids, record))[1]
    points = {part.id for part in found.components}
    assert "frames.raised-elsewhere" not in points
    assert "frames.native" in points
