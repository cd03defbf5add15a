"""Harvested drafts in the store: create, re-harvest, curated records kept, gone sites,
the draft state in the API, and `errkb harvest` on a source folder."""

import itertools
import json
import sqlite3
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from sqlalchemy import delete, event
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select
from typer.testing import CliRunner

from app import store
from app.harvest import drafts
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.records import locations
from app.records import service as records
from app.records.filters import RecordFilters
from app.store.engine import open_store, unit_of_work
from app.store.tables import Record
from app.upstreams.release_cache import WHEELS_DIR, Upstream
from tests.helpers.libraries import package_index, write_wheel
from tests.helpers.records import DATA_DIR, SEED_FILES
from tests.helpers.servers import ADMIN_TOKEN, uvicorn_server
from tests.helpers.writers import WriterLog, lost_writes, run_writer_threads, total

SHORT_LOCK_S = 0.2
BACKGROUND_RELEASE = "sqlalchemy"  # installed: a real release harvested without a download
WRITERS = 8
WRITE_ROUND_S = 1.0
MAX_WRITE_ROUNDS = 120
WRITE_WAIT_S = 2.0  # a write waiting longer is answered 503: one batch, then its turn, is less
FIRST = """
class Pool:
    def free(self, buffers):
        if len(buffers) > self.count:
            raise RuntimeError(f"cannot free {len(buffers)} buffers, only {self.count} in use")

    def grow(self, n):
        raise ValueError("pool cannot grow by %d blocks" % n)

    def old(self):
        raise KeyError("legacy slot table was removed")
"""
SECOND = """
import os


class Pool:
    def free(self, buffers):
        # the same raise, two lines lower in the next release
        if len(buffers) > self.count:
            raise RuntimeError(f"cannot free {len(buffers)} buffers, only {self.count} in use")

    def grow(self, n):
        raise ValueError("pool cannot grow by %d blocks" % n)

    def shrink(self, n):
        raise ValueError(f"pool cannot shrink below {n} blocks")
"""


def _release(root: Path, source: str, ref: str) -> drafts.Release:
    package = root / "pooling"
    package.mkdir(parents=True, exist_ok=True)
    (package / "pool.py").write_text(textwrap.dedent(source))
    return drafts.resolve_release(str(root), repo="example/pooling", ref=ref)


def _by_message(session: Session) -> dict[str, records.StoredRecord]:
    page = records.list_records(session, RecordFilters(repo="example/pooling"), 200)
    return {item.record.error_message: item for item in page.items}


def test_harvest_then_reharvest(session: Session, tmp_path: Path) -> None:
    release = _release(tmp_path / "src", FIRST, "v1")
    result, counts = drafts.harvest_release(session, release)
    assert (result.files, result.raise_sites, counts.created) == (1, 3, 3)
    stored = _by_message(session)
    free = stored["cannot free {len_buffers} buffers, only {count} in use"]
    assert free.review_state == "draft"
    assert free.origin == f"harvest:{release.spec}"
    record = free.record.model_dump()
    assert record["filePath"] == "pooling/pool.py"
    assert record["lineNumber"] == 5
    assert record["documentation"] is None
    assert record["solutions"] is None
    assert record["githubUrl"].startswith("https://github.com/example/pooling/blob/v1/")

    curated = stored["pool cannot grow by {n} blocks"].record.model_dump() | {
        "documentation": "Curated: the pool has a fixed number of blocks.",
        "solutions": ["Size the pool up front."],
    }
    records.write_records(session, [curated])
    records.set_review_state(session, curated["id"], records.REVIEWED)
    session.commit()

    release = _release(tmp_path / "src", SECOND, "v2")
    _, counts = drafts.harvest_release(session, release)
    assert (counts.created, counts.updated, counts.claimed, counts.gone) == (1, 1, 1, 1)
    after = _by_message(session)
    moved = after["cannot free {len_buffers} buffers, only {count} in use"]
    assert moved.id == free.id
    assert moved.record.line_number == 9
    grow = after["pool cannot grow by {n} blocks"]
    assert grow.review_state == "reviewed"
    assert grow.record.model_dump() == curated, (
        "a reviewed record keeps the location it was written at"
    )
    located = locations.record_locations(session, [grow.id])[grow.id]
    assert [(loc.release, loc.line_number, loc.function) for loc in located] == [
        ("example/pooling@v1", 8, "grow"),
        ("example/pooling@v2", 12, "grow"),
    ]
    assert "/blob/v2/" in located[-1].github_url
    assert not located[-1].gone
    gone = after["legacy slot table was removed"]
    assert locations.record_locations(session, [gone.id])[gone.id][-1].gone
    assert after["legacy slot table was removed"].gone_in == release.spec
    assert after["pool cannot shrink below {n} blocks"].gone_in is None

    _, again = drafts.harvest_release(session, release)
    assert (again.created, again.updated, again.gone) == (0, 0, 0)
    assert again.unchanged == 2


CANCEL = (
    "def _cancel_control_offset(self, control_offset):\n"
    "    raise RuntimeError(\n"
    '        "CUDA VMM pool has no occupied slice at control offset "\n'
    '        f"{control_offset}"\n'
    "    )\n"
)


def test_seed_records_claim_their_site_and_win_ties(session: Session, tmp_path: Path, settings):
    records.import_paths(session, [DATA_DIR])
    before = records.get_record(session, "edc4df790b100979").document
    root = tmp_path / "sglang-src"
    target = root / "python" / "sglang" / "srt" / "utils"
    target.mkdir(parents=True)
    (target / "cuda_vmm_transport_utils.py").write_text(CANCEL)
    (target / "copied_elsewhere.py").write_text(CANCEL)  # same message, another file: apart
    release = drafts.resolve_release(str(root), repo="sgl-project/sglang", ref="v9")
    _, counts = drafts.harvest_release(session, release)
    assert (counts.created, counts.claimed) == (1, 1)
    assert records.get_record(session, "edc4df790b100979").document == before
    [located] = locations.record_locations(session, ["edc4df790b100979"])["edc4df790b100979"]
    assert (located.release, located.line_number) == ("sgl-project/sglang@v9", 2)
    matcher = Matcher(session.get_bind(), settings.cache_dir, 1 << 20)
    line = "RuntimeError: CUDA VMM pool has no occupied slice at control offset 64"
    # Nothing in the line tells the two files apart: one answer, the curated record first.
    [first] = match_text(matcher, session, line).matches
    assert first.id == "edc4df790b100979"
    assert first.record.review_state == "reviewed"
    [second] = first.same_message
    assert second.review_state == "draft"
    assert second.file_path is not None
    assert second.file_path.endswith("copied_elsewhere.py")
    assert any(reason.startswith("reviewed record") for reason in first.reasons)
    assert any(
        reason.endswith("copied_elsewhere.py:2 (sgl-project/sglang)") for reason in first.reasons
    )


def test_draft_state_in_the_api(make_client, tmp_path: Path) -> None:
    client = make_client(*SEED_FILES)  # three reviewed records beside the three drafts
    with unit_of_work(client.app.state.services.engine) as session:
        drafts.harvest_release(session, _release(tmp_path / "src", FIRST, "v1"))
    listing = client.get("/api/errors", params={"reviewState": "draft"}).json()
    assert listing["total"] == 3
    assert {item["reviewState"] for item in listing["items"]} == {"draft"}
    reviewed = client.get("/api/errors", params={"reviewState": "reviewed"}).json()
    assert reviewed["total"] == 3
    document = client.get(f"/api/errors/{listing['items'][0]['id']}").json()
    assert document["review"]["state"] == "draft"
    assert document["review"]["origin"].startswith("harvest:")
    stats = client.get("/api/stats").json()
    assert stats["perReviewState"] == {"draft": 3, "reviewed": 3}


def test_folder_without_repo_is_refused(tmp_path: Path) -> None:
    with pytest.raises(drafts.ReleaseError, match="--repo"):
        drafts.resolve_release(str(tmp_path))
    with pytest.raises(drafts.ReleaseError, match="not installed"):
        drafts.resolve_release("no-such-distribution-errkb")


def test_installed_distribution_resolves_to_its_repo() -> None:
    pytest.importorskip("torch", reason="the installed torch is the distribution resolved")
    release = drafts.resolve_release("torch")
    assert release.repo == "pytorch/pytorch"
    assert release.ref.startswith("v2.")
    assert "+" not in release.ref
    assert release.scopes[0] == "torch/"
    assert "c10/" in release.scopes  # its headers' native sites


def test_the_installed_torch_release_is_read_where_it_is(tmp_path: Path) -> None:
    """`errkb serve` harvests torch==2.13.0 by default: the installed release is read in
    place, nothing downloaded into the (empty) cache; another release would be."""
    from importlib.metadata import version

    pytest.importorskip("torch")
    installed = version("torch").split("+")[0]
    cache = Upstream(tmp_path, build_libraries=False)  # the CUDA build's: another test's
    release = drafts.resolve_release(f"torch=={installed}", releases=cache)
    assert release.label == f"torch=={installed}"
    assert (release.root / "torch" / "__init__.py").is_file()
    assert release.scopes[0] == "torch/"
    assert release.native_root == release.root  # the installed wheel's headers
    assert list(tmp_path.iterdir()) == []
    another = "torch==0.0.1"  # without a cache it is refused, not downloaded
    with pytest.raises(drafts.ReleaseError, match="needs the upstream cache"):
        drafts.resolve_release(another)


def test_a_cuda_build_that_cannot_be_had_is_a_skipped_count_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed torch is read in place and its CUDA build's libraries come from the
    cache; a wheel that cannot be read (cut here, served by an index on the loopback
    interface) leaves the harvest without them, its reason among the skipped counts."""
    from importlib.metadata import version

    pytest.importorskip("torch")
    installed = version("torch").split("+")[0]
    cut = write_wheel(
        tmp_path / f"torch-{installed}-cp311-cp311-manylinux_2_28_x86_64.whl",
        {"torch/lib/libtorch_cuda.so": bytes(range(256)) * 64},
    )
    cut.write_bytes(cut.read_bytes()[:1000])
    with package_index("torch", [cut]) as url:
        monkeypatch.setenv("PIP_INDEX_URL", url)
        release = drafts.resolve_release(f"torch=={installed}", releases=Upstream(tmp_path))
    assert release.build_root is None
    assert release.build_skipped is not None
    assert release.build_skipped.startswith(f"reading the libraries of torch=={installed}")
    folder = _release(tmp_path / "src", FIRST, "v1")
    skipped = drafts.extract_release(
        replace(folder, build_skipped=release.build_skipped)
    ).result.skipped
    assert skipped[f"build libraries not read: {release.build_skipped}"] == 1


@pytest.mark.network
@pytest.mark.parametrize(
    ("version", "wheel"),
    [
        ("2.0.1", "torch-2.0.1-cp311-none-macosx_11_0_arm64.whl"),
        ("2.12.1", "torch-2.12.1-cp311-cp311-macosx_14_0_arm64.whl"),
    ],
)
def test_an_older_torch_comes_from_its_small_wheel_and_names_its_repo(
    version: str, wheel: str
) -> None:
    """torch's older releases are harvested from the macOS arm64 wheel (the same Python
    sources, a tenth of Linux's CUDA wheel), the oldest and the newest of them alike (the
    first built for macOS 11, the last for 14 only); its metadata names no GitHub
    repository, so the known upstream's is taken. Its compiled messages come from the Linux
    CUDA wheel's libraries, of which only the read-only data is kept."""
    from tests.helpers.releases import RELEASES

    release = drafts.resolve_release(f"torch=={version}", releases=RELEASES)
    assert release.repo == "pytorch/pytorch"
    assert release.ref == f"v{version}"
    assert (release.root / "torch" / "optim" / "optimizer.py").is_file()
    wheels = list((RELEASES.cache_dir / WHEELS_DIR).glob(f"torch-{version}-*.whl"))
    assert [found.name for found in wheels] == [wheel]
    assert release.build_root is not None
    assert (release.build_root / "torch" / "lib" / "libtorch_cuda.so.rodata").is_file()


@pytest.mark.network
def test_sglangs_kernels_are_harvested_with_the_release_that_requires_them(
    session: Session,
) -> None:
    """SGLang 0.4.9.post6 requires sgl-kernel==0.2.7, a wheel of SGLang's repository with
    no tag of its own: its Python is harvested with the release, filed where the repository
    keeps it and linked at the release's tag."""
    from tests.helpers.releases import RELEASES

    release = drafts.resolve_release("sglang==0.4.9.post6", releases=RELEASES)
    assert [tree.root.name for tree in release.bundled] == ["sgl-kernel-0.2.7"]
    assert "sgl-kernel/python/sgl_kernel/" in release.scopes
    drafts.harvest_release(session, release)
    rows = session.exec(
        select(Record).where(col(Record.error_message) == "cos_sin_cache should be float32")
    ).all()
    assert [row.file_path for row in rows] == ["sgl-kernel/python/sgl_kernel/elementwise.py"]
    record = records.get_record(session, rows[0].id)
    assert record is not None
    assert (record.record.repo, record.record.error_class) == ("sgl-project/sglang", "ValueError")
    assert (record.record.github_url or "").startswith(
        "https://github.com/sgl-project/sglang/blob/v0.4.9.post6/sgl-kernel/python/sgl_kernel/"
        "elementwise.py#L"
    )


def test_cli_harvest_prints_counts(tmp_path: Path, monkeypatch) -> None:
    from app.cli.commands import app

    monkeypatch.setenv("ERRKB_DATABASE_URL", f"sqlite:///{tmp_path / 'h.db'}")
    _release(tmp_path / "src", FIRST, "v1")
    runner = CliRunner()
    result = runner.invoke(
        app, ["harvest", str(tmp_path / "src"), "--repo", "example/pooling", "--ref", "v1"]
    )
    missing = runner.invoke(app, ["harvest", str(tmp_path / "src")])
    exported = runner.invoke(app, ["export", "--review-state", "draft"])
    assert result.exit_code == 0, result.output
    assert "1 files, 3 raise sites, 0 log sites; drafts created 3" in result.output
    assert missing.exit_code == 2
    assert "--repo" in missing.output
    assert len([json.loads(line) for line in exported.output.splitlines()]) == 3


def test_a_curators_write_of_a_draft_makes_it_reviewed(make_client, tmp_path, auth) -> None:
    client = make_client(DATA_DIR)
    with unit_of_work(client.app.state.services.engine) as session:
        drafts.harvest_release(session, _release(tmp_path / "src", FIRST, "v1"))
    draft = client.get("/api/errors", params={"reviewState": "draft"}).json()["items"][0]
    record = client.get(f"/api/errors/{draft['id']}").json()["record"]
    record["documentation"] = "Explained by a curator."
    written = client.put(f"/api/errors/{draft['id']}", json=record, headers=auth)
    assert written.status_code == 200
    assert written.json()["review"]["state"] == "reviewed"


def test_a_harvest_commits_in_short_batches(settings, tmp_path: Path, monkeypatch) -> None:
    """A concurrent write waits behind one batch of drafts, never behind a whole release,
    and the dataset version moves once, when the release is in. On SQLite the lock is left
    free a moment after each transaction, for the writers of other processes, which poll
    for it; on PostgreSQL they queue for it, and nothing pauses."""
    engine = open_store(settings)
    order: list[str] = []
    monkeypatch.setattr(drafts.time, "sleep", lambda seconds: order.append(f"pause {seconds}"))
    sites = 2 * drafts.HARVEST_BATCH + 7
    source = "".join(
        f"def check_{n}(slot):\n    raise ValueError('slot table {n} has no free entry')\n"
        for n in range(sites)
    )
    release = _release(tmp_path / "src", source, "v1")
    inserted: list[int] = [0]
    per_transaction: list[int] = []
    bumps: list[str] = []

    def count(_conn, cursor, statement: str, _parameters, _ctx, _many: bool) -> None:
        # rows as the database counts them: PostgreSQL gets one multi-row INSERT per batch
        if statement.startswith("INSERT INTO records "):
            inserted[-1] += cursor.rowcount
        if statement.startswith("UPDATE dataset_state"):
            bumps.append(statement)

    def commit(_conn) -> None:
        per_transaction.append(inserted[-1])
        inserted[-1] = 0
        order.append("commit")

    event.listen(engine, "after_cursor_execute", count)
    event.listen(engine, "commit", commit)
    try:
        with unit_of_work(engine) as session:
            _, counts = drafts.harvest_release(session, release)
    finally:
        event.remove(engine, "after_cursor_execute", count)
        event.remove(engine, "commit", commit)
    assert counts.created == sites
    assert sum(per_transaction) == sites
    assert len([n for n in per_transaction if n]) == 3
    assert max(per_transaction) <= drafts.HARVEST_BATCH
    assert len(bumps) == 1
    if store.backend(engine).waiting_writers_poll:
        pause = f"pause {drafts.HARVEST_YIELD_S}"
        assert order.count("commit") >= 4  # 3 batches and the rest
        assert [after for before, after in itertools.pairwise(order) if before == "commit"] == [
            pause
        ] * order.count("commit")
    else:
        assert not [step for step in order if step.startswith("pause")]
    with Session(engine) as session:
        stored = records.list_records(session, RecordFilters(repo="example/pooling"), 1)
        assert stored.total == sites
        assert drafts.is_harvested(session, release.spec)


@pytest.mark.sqlite_only
def test_a_harvest_waits_its_turn_behind_other_writers(settings, tmp_path: Path) -> None:
    """Another writer holding the write lock past one lock wait, between two batches, makes
    the harvest wait again, not fail."""
    hold_s = 3 * SHORT_LOCK_S
    engine = open_store(settings.model_copy(update={"lock_timeout_s": SHORT_LOCK_S}))
    sites = drafts.HARVEST_BATCH + 5
    source = "".join(
        f"def check_{n}(slot):\n    raise ValueError('slot table {n} has no free entry')\n"
        for n in range(sites)
    )
    release = _release(tmp_path / "src", source, "v1")
    database = engine.url.database
    held = threading.Event()
    blockers: list[threading.Thread] = []

    def block() -> None:
        other = sqlite3.connect(database, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(hold_s)
        other.execute("COMMIT")
        other.close()

    def after_first_batch(_session) -> None:
        if not blockers:
            blockers.append(threading.Thread(target=block))
            blockers[0].start()
            assert held.wait(timeout=10)

    try:
        with unit_of_work(engine) as session:
            event.listen(session, "after_commit", after_first_batch)
            _, counts = drafts.harvest_release(session, release)
    finally:
        for blocker in blockers:
            blocker.join()
    assert blockers, "the harvest committed no batch"
    assert counts.created == sites
    with Session(engine) as session:
        assert drafts.is_harvested(session, release.spec)


def test_writers_beside_a_background_harvest_get_no_503(settings, tmp_path: Path) -> None:
    """8 writers POST, PUT and DELETE through a real server while it harvests a real
    release (the installed SQLAlchemy: about 1,800 drafts, several batches) in the
    background: none waits its whole (shortened) lock timeout, so none is answered 503 or
    any 5xx, and every acknowledged write holds."""
    with unit_of_work(open_store(settings)) as session:
        assert records.import_paths(session, [DATA_DIR]).written
    env = {
        "ERRKB_DATABASE_URL": settings.database_url,
        "ERRKB_ADMIN_TOKEN": ADMIN_TOKEN,
        "ERRKB_CACHE_DIR": str(tmp_path / "served-cache"),
        "ERRKB_HARVEST_ON_START": "true",
        "ERRKB_DEFAULT_RELEASES": "[]",
        "ERRKB_OLDER_RELEASES": json.dumps([BACKGROUND_RELEASE]),
        "ERRKB_SETTLE_HEAP": "false",
        "ERRKB_LOCK_TIMEOUT_S": str(WRITE_WAIT_S),
    }
    logs: list[WriterLog] = []
    rounds = 0
    with uvicorn_server(env, "/readyz") as base:
        while rounds < MAX_WRITE_ROUNDS:
            first = rounds * WRITERS  # each round's writers write ids of their own
            logs += run_writer_threads(base, ADMIN_TOKEN, WRITERS, WRITE_ROUND_S, first)
            rounds += 1
            background = httpx.get(f"{base}/readyz").json()["background"]
            if not background["pending"]:
                break
    assert (background["done"], background["failed"]) == (1, {}), background
    assert rounds > 1, "the harvest was over before the first round of writes was"
    done = total(logs)
    assert done.errors == 0, done.statuses
    assert done.writes > WRITERS
    assert lost_writes(settings.database_url, logs) == 0
    with Session(open_store(settings)) as session:
        harvested = records.list_records(session, RecordFilters(repo="sqlalchemy/sqlalchemy"), 1)
    assert harvested.total > 2 * drafts.HARVEST_BATCH


@pytest.mark.postgresql_only
def test_a_record_a_harvest_marks_gone_cannot_be_deleted_before_it_commits(
    settings, tmp_path: Path
) -> None:
    """Between the read of the records a release no longer raises and the insert of their
    gone locations, a concurrent API delete of one of them failed the harvest on the
    locations' foreign key: the read locks them, and the delete waits for the commit."""
    engine = open_store(settings)
    release = _release(tmp_path / "src", FIRST, "v1")
    with unit_of_work(engine) as session:
        drafts.harvest_release(session, release)
    newer = _release(tmp_path / "src", SECOND, "v2")
    with unit_of_work(engine) as session:
        gone = drafts._gone_locations(session, newer, set())
        assert gone
        with engine.connect() as other:
            other.exec_driver_sql("SET lock_timeout = '200ms'")
            with pytest.raises(OperationalError, match="lock timeout"):
                other.execute(delete(Record).where(col(Record.id) == next(iter(gone))))
            other.rollback()
