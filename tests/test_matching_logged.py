"""Pasted log lines matched to the records of the real log sites that print them: vLLM's
and SGLang's warnings, alone or before the traceback of an exception."""

import shutil

import pytest

from app.harvest import drafts
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.records import service as records
from app.store.engine import open_store, unit_of_work
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # two real upstream files, from the shared release cache

SAMPLER = ("sglang", "0.4.9.post6", "sglang/srt/layers/sampler.py", "sgl-project/sglang")
SCHEDULER = ("vllm", "0.8.5.post1", "vllm/core/scheduler.py", "vllm-project/vllm")
NAN = "Detected errors during sampling! NaN in the logits."
TOO_LONG = "Input prompt (40000 tokens) is too long and exceeds limit of 32768"


@pytest.fixture
def store(settings, tmp_path):
    """A store holding the drafts of two real upstream files that log what users paste."""
    with unit_of_work(open_store(settings)) as session:
        for package, version, path, repo in (SAMPLER, SCHEDULER):
            folder = tmp_path / package
            (folder / path).parent.mkdir(parents=True)
            shutil.copy(RELEASES.ensure_unpacked(package, version) / path, folder / path)
            release = drafts.resolve_release(str(folder), repo=repo, ref=f"v{version}")
            drafts.harvest_release(session, release)
        session.commit()
        yield session, Matcher(session.get_bind(), settings.cache_dir, 1 << 20)


def _record(session, record_id: str) -> dict:
    return records.get_record(session, record_id).record.model_dump(by_alias=True)


def test_a_vllm_warning_line_matches_its_log_site(store) -> None:
    session, matcher = store
    paste = f"WARNING 03-05 10:12:01 scheduler.py:1106] {TOO_LONG}\n"
    top = match_text(matcher, session, paste).matches[0]
    record = _record(session, top.id)
    assert (record["errorType"], record["errorClass"], record["filePath"]) == (
        "log",
        "WARNING",
        "vllm/core/scheduler.py",
    )
    assert top.captures == {"num_new_tokens": "40000", "prompt_limit": "32768"}
    assert [c.id for c in top.components][:2] == ["message.log-line", "class.agrees"]
    assert top.exception_index is None


def test_an_sglang_log_line_without_a_level_matches_the_log_over_the_raise(store) -> None:
    """SGLang's sampler logs the warning and raises the same words only when told to crash
    on warnings: a log line is the log site's."""
    session, matcher = store
    result = match_text(matcher, session, f"[2025-01-01 10:00:00 TP0] {NAN}\n")
    first, second = result.matches[:2]
    assert _record(session, first.id)["errorType"] == "log"
    assert _record(session, second.id)["errorClass"] == "ValueError"
    assert first.score > second.score


def test_a_message_logged_then_raised_is_answered_by_the_raise(store) -> None:
    """The warning's record also fits the exception's message, in another class: the
    raise, at the frame's file and in the pasted class, is the answer."""
    session, matcher = store
    paste = (
        f"WARNING 03-05 10:12:01 sampler.py:65] {NAN}\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/site-packages/sglang/srt/layers/sampler.py", line 70, '
        "in forward\n"
        f'    raise ValueError("{NAN}")\n'
        f"ValueError: {NAN}\n"
    )
    matches = match_text(matcher, session, paste).matches
    first = _record(session, matches[0].id)
    assert (first["errorClass"], matches[0].exception_index) == ("ValueError", 0)
    logged = [m for m in matches if _record(session, m.id)["errorType"] == "log"]
    assert logged, "the warning's record is still shown, after the exception's"
    assert logged[0].score < matches[0].score


def test_a_warning_before_a_traceback_does_not_displace_the_exception(store) -> None:
    """vLLM warns of preemption, then fails for want of swap space: the exception's record
    leads, the warning's record comes after it, as a line of the log around it."""
    session, matcher = store
    paste = (
        "WARNING 05-02 10:12:01 scheduler.py:1768] Sequence group 7 is preempted by "
        "PreemptionMode.SWAP mode because there is not enough KV cache space. This can affect "
        "the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size "
        "to provide more KV cache memory. total_num_cumulative_preemption=1\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/core/scheduler.py", line 1825, '
        "in _swap_out\n"
        "    raise RuntimeError(\n"
        "RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap "
        "space to avoid this error.\n"
    )
    matches = match_text(matcher, session, paste).matches
    first = _record(session, matches[0].id)
    assert (first["errorClass"], matches[0].exception_index) == ("RuntimeError", 0)
    second = _record(session, matches[1].id)
    assert (second["errorType"], second["lineNumber"]) == ("log", 1768)
    assert matches[1].exception_index is None
    assert matches[1].components[0].id == "message.in-log-line"  # context of the exception
