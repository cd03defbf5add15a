"""The short explanation, from the local store (the server's answers are the same JSON:
tests/test_cli_client.py): which errors of a log are explained, once each, as text and as a
job summary's Markdown."""

import re
from pathlib import Path

import pytest

from app.client.explain import Explanation, as_markdown, as_text, explain_log, explanations
from app.client.local import LocalStore
from app.config import Settings
from app.records import service as records
from app.reproducers import runner
from app.store.engine import unit_of_work
from tests.helpers.logs import (
    FREE_BUFFERS,
    FREE_BUFFERS_ID,
    TORCHRUN_LOG,
    VLLM_LOG,
    VMM_SLICE_ID,
)
from tests.helpers.records import DATA_DIR


@pytest.fixture
def store(settings: Settings) -> LocalStore:
    """The local store holding the records of data/."""
    local = LocalStore(settings)
    with unit_of_work(local.engine) as session:
        records.import_paths(session, [DATA_DIR], partial=False)
    return local


def test_each_known_error_of_a_log_is_explained_once(store: LocalStore) -> None:
    found = explain_log(store, VLLM_LOG + TORCHRUN_LOG + VLLM_LOG)
    assert [item.record_id for item in found] == [FREE_BUFFERS_ID, VMM_SLICE_ID]
    first = found[0]
    assert first.title == f"RuntimeError: {FREE_BUFFERS}"
    assert first.link == f"errkb show {FREE_BUFFERS_ID}"
    assert first.advice.startswith("Audit all free_buffer call sites")
    assert first.reproduced == f"reproducer: reproducers/{FREE_BUFFERS_ID}.py (no passing run yet)"
    assert found[1].seen == (
        "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096"
    )
    assert as_text(first).splitlines() == [
        f"errkb: RuntimeError: {FREE_BUFFERS} (vllm-project/vllm)",
        f"  see: errkb show {FREE_BUFFERS_ID}",
        f"  fix: {first.advice}",
        f"  reproducer: reproducers/{FREE_BUFFERS_ID}.py (no passing run yet)",
    ]


def test_a_record_already_explained_is_not_explained_again(store: LocalStore) -> None:
    explained: set[str] = set()
    assert len(explanations(store, VLLM_LOG, explained)) == 1
    assert explanations(store, VLLM_LOG, explained) == []
    assert explained == {FREE_BUFFERS_ID}


def test_a_log_without_known_errors_explains_nothing(store: LocalStore) -> None:
    assert explain_log(store, "KeyError: 'model'\nall good\n") == []
    assert as_markdown([], "job.log") == "### errkb: no known error in `job.log`\n"


def test_markdown_shows_text_as_written(store: LocalStore) -> None:
    found = explain_log(store, TORCHRUN_LOG)
    summary = as_markdown(found, "train`s.log")
    assert summary.startswith("### errkb: 1 known error in `` train`s.log ``\n")
    assert (
        "#### RuntimeError: CUDA VMM pool has no occupied slice at control offset "
        "{control\\_offset}\n\n"
        "`RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096` "
        f"(sgl-project/sglang; `errkb show {VMM_SLICE_ID}`)\n"
    ) in summary
    assert "**Fix:** Ensure cancel is called exactly once per slice" in summary
    hostile = Explanation(
        record_id="x",
        title="<img src=x> *bold* [link](http://x)",
        repo="o/r",
        link="http://host/errors/x",
        advice="# heading | cell",
        reproduced=None,
        seen="`tick`",
    )
    text = as_markdown([hostile], "log")
    assert "<img" not in text
    assert "\\*bold\\* \\[link\\](http://x)" in text
    assert "**Fix:** \\# heading \\| cell" in text
    assert "`` `tick` ``" in text


@pytest.mark.network  # runs the record's reproducer against vllm 0.33.0 (downloaded if needed)
def test_a_passing_reproducer_run_says_where_it_reproduced(
    store: LocalStore, settings: Settings
) -> None:
    cached = settings.model_copy(update={"cache_dir": Settings().cache_dir})
    (outcome,) = runner.verify(store.engine, cached, [FREE_BUFFERS_ID], "cpu")
    assert outcome.status == "passed", outcome.reason
    (found,) = explain_log(store, VLLM_LOG)
    assert found.reproduced is not None
    assert re.fullmatch(
        r"Reproduced on CPU \(torch [\w.+]+, Python 3\.\d+\.\d+\) on \d{4}-\d\d-\d\d, "
        r"against vllm 0\.33\.0",
        found.reproduced,
    )
    assert found.reproduced in as_markdown([found], "log")


def test_the_local_store_creates_nothing_when_asked_not_to(tmp_path: Path) -> None:
    from app.client.http import ClientError

    database = tmp_path / "none.db"
    with pytest.raises(ClientError, match="no local store at"):
        LocalStore(Settings(database_url=f"sqlite:///{database}"), create=False)
    assert not database.exists()
