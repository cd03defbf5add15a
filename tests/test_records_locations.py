"""One raise site, one record: claims, locations per release, aliases,
and the seed errors answering with their curated record on the default serve's store."""

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlmodel import Session

from app.config import Settings
from app.harvest import drafts
from app.main import create_app
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.records import locations, site_keys
from app.records import service as records
from app.search import service as search
from app.store.engine import make_engine, unit_of_work, upgrade
from app.store.tables import Record
from tests.helpers.old_store import insert_at_revision
from tests.helpers.real_errors import SEED_TRACEBACKS, noise_variants, program_traceback
from tests.helpers.records import DATA_DIR
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # downloads from the package index

DEFAULT_RELEASES = ("vllm==0.33.0", "sglang==0.5.23")
# Where each seed's raise site is in the harvested release: what its real traceback shows.
SEED_SITES = {
    "c53f6de81577a6bc": ("vllm==0.33.0", 259),
    "b6bab2e17ae18394": ("vllm==0.33.0", 241),
    "edc4df790b100979": ("sglang==0.5.23", 584),
}
# The drafts today's harvest made for those sites before one record per raise site.
SEED_DUPLICATES = {
    "9207809c0c7eaea6": "c53f6de81577a6bc",
    "5c72e2f1cc5fd8d6": "b6bab2e17ae18394",
    "20f38da6158c9a5b": "edc4df790b100979",
}
SEED_FILES = {  # release -> (package folder inside the repository, the seed files in it)
    ("vllm", "0.33.0", "vllm-project/vllm", ""): [
        "vllm/distributed/kv_transfer/kv_connector/v1/hf3fs/utils/gather_scatter_helper.py",
        "vllm/distributed/device_communicators/shm_object_storage.py",
    ],
    ("sglang", "0.5.23", "sgl-project/sglang", "python/"): [
        "sglang/srt/utils/cuda_vmm_transport_utils.py",
    ],
}


def _seed_release_folders(tmp_path: Path) -> list[drafts.Release]:
    """The real files of the seed errors, copied from the released packages into folders
    laid out as their repositories are, each a small release to harvest quickly."""
    releases = []
    for (name, version, repo, prefix), files in SEED_FILES.items():
        source = RELEASES.ensure_unpacked(name, version)
        root = tmp_path / name
        for file_path in files:
            target = root / prefix / file_path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / file_path, target)
        releases.append(drafts.resolve_release(str(root), repo=repo, ref=f"v{version}"))
    return releases


def test_an_upgrade_merges_the_duplicates_an_earlier_harvest_made(tmp_path: Path) -> None:
    """A store made before one record per raise site: curated seeds, and beside each the
    draft of its site."""
    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    upgrade(engine, "0004")
    insert_at_revision(engine, [_load(path) for path in sorted(DATA_DIR.glob("*.json"))])
    for release in _seed_release_folders(tmp_path / "src"):
        harvested = drafts.harvest.harvest_tree(
            release.root, repo=release.repo, ref=release.ref, analyzed_at="2026-11-30T00:00:00Z"
        )
        spec = "vllm==0.33.0" if release.repo.startswith("vllm") else "sglang==0.5.23"
        origin = drafts.ORIGIN_PREFIX + spec
        rows = [draft.record for draft in harvested.drafts]
        insert_at_revision(engine, rows, review_state=records.DRAFT, origin=origin)
    with Session(engine) as session:
        present = records.get_records(session, SEED_DUPLICATES)
        assert set(present) == set(SEED_DUPLICATES), "the old harvest made the duplicates"

    upgrade(engine)
    with Session(engine) as session:
        assert records.get_records(session, SEED_DUPLICATES) == {}
        assert _drafts_sharing_a_curated_key(session) == []
        for alias, record_id in SEED_DUPLICATES.items():
            assert locations.resolve_alias(session, alias) == record_id
            release, line = SEED_SITES[record_id]
            [located] = locations.record_locations(session, [record_id])[record_id]
            assert (located.release, located.line_number) == (release, line)
        for path in DATA_DIR.glob("*.json"):
            assert records.get_record(session, path.stem).record.model_dump() == _load(path)


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _drafts_sharing_a_curated_key(session: Session) -> list[str]:
    curated = select(Record.site_key).where(Record.review_state == records.REVIEWED)
    statement = select(Record.id).where(
        Record.review_state == records.DRAFT, Record.site_key.in_(curated)
    )
    return list(session.execute(statement).scalars())


def test_a_curated_record_whose_key_differs_is_left_alone(session: Session, tmp_path) -> None:
    renamed = _load(DATA_DIR / "c53f6de81577a6bc.json") | {
        "filePath": "vllm/distributed/kv_transfer/old_location/gather_scatter_helper.py"
    }
    records.write_records(session, [renamed])
    session.commit()
    [vllm, _sglang] = _seed_release_folders(tmp_path)
    _, counts = drafts.harvest_release(session, vllm)
    assert counts.claimed == 0
    assert counts.absorbed == 0
    draft = records.get_record(session, "9207809c0c7eaea6")
    assert draft is not None
    assert draft.review_state == records.DRAFT
    assert records.get_record(session, renamed["id"]).record.model_dump() == renamed
    assert locations.resolve_alias(session, "9207809c0c7eaea6") is None
    [gone] = locations.record_locations(session, [renamed["id"]])[renamed["id"]]
    assert gone.gone
    assert gone.release == vllm.label


@pytest.fixture(scope="module", params=["import-then-harvest", "harvest-then-import"])
def default_store(request, tmp_path_factory) -> Iterator[tuple[Session, Matcher, TestClient, str]]:
    """The store `make serve` builds: data/ imported and the default releases harvested."""
    folder = tmp_path_factory.mktemp(request.param)
    settings = Settings(database_url=f"sqlite:///{folder / 'errkb.db'}", cache_dir=folder)
    app = create_app(settings)
    with unit_of_work(app.state.services.engine) as session:
        steps = [lambda: records.import_paths(session, [DATA_DIR])] + [
            lambda spec=spec: drafts.harvest_release(
                session, drafts.resolve_release(spec, releases=RELEASES)
            )
            for spec in DEFAULT_RELEASES
        ]
        for step in steps if request.param == "import-then-harvest" else steps[1:] + steps[:1]:
            step()
    with Session(app.state.services.engine) as session:
        yield session, app.state.services.matcher, TestClient(app), request.param


def test_every_seed_traceback_finds_its_curated_record_first(default_store, tmp_path) -> None:
    session, matcher, _, _ = default_store
    other, _ = program_traceback(tmp_path)
    for record_id, make in SEED_TRACEBACKS.items():
        for name, text in noise_variants(make(), other).items():
            matches = match_text(matcher, session, text).matches
            top = matches[0]
            assert top.id == record_id, (name, [(m.id, m.score, m.reasons) for m in matches[:3]])
            if name == "plain":
                release, line = SEED_SITES[record_id]
                assert any(f":{line}, the record's line in {release}" in r for r in top.reasons)


def test_no_draft_shares_a_key_with_a_curated_record(default_store) -> None:
    session, _, _, _ = default_store
    assert _drafts_sharing_a_curated_key(session) == []
    for record_id, (release, line) in SEED_SITES.items():
        known = locations.record_locations(session, [record_id])[record_id]
        assert [(loc.release, loc.line_number, loc.gone) for loc in known] == [
            (release, line, False)
        ]


def test_the_api_and_the_page_show_each_release(default_store) -> None:
    _, _, client, _ = default_store
    body = client.get("/api/errors/c53f6de81577a6bc").json()
    assert body["record"]["lineNumber"] == 285, "the record stays as it was written"
    [located] = body["locations"]
    assert located["release"] == "vllm==0.33.0"
    assert located["lineNumber"] == 259
    assert located["status"] == "moved"
    assert located["function"] == "free_buffer"
    assert located["githubUrl"].startswith("https://github.com/vllm-project/vllm/blob/v0.33.0/")
    assert located["sourceCode"].split("\n")[259 - located["sourceCodeStart"]].strip() == (
        'raise RuntimeError("Attempted to free more buffers than allocated")'
    )
    code = located["codeContext"]  # what the code checks, for the curated site too
    assert code["guard"] == "self._inuse_count < len(buffers)"
    assert code["docstring"] == "Return buffers to the pool."
    assert {c["function"] for c in code["callers"]} >= {"_handle_save_task", "_handle_load_task"}
    assert all(c["githubUrl"].split("/blob/")[1].startswith("v0.33.0/") for c in code["callers"])
    page = client.get("/errors/c53f6de81577a6bc").text
    assert 'It raises when <code class="guard">self._inuse_count &lt; len(buffers)</code>' in page
    assert "Called from" in page
    assert "_handle_save_task" in page
    assert "Caught by" in page
    assert "vllm 0.33.0</strong>:" in page
    assert "line 259, in <code>free_buffer</code>, moved from 285 at c794754" in page


def test_absorbed_ids_keep_answering(default_store) -> None:
    session, _, client, order = default_store
    for alias, record_id in SEED_DUPLICATES.items():
        if order == "import-then-harvest":
            assert locations.resolve_alias(session, alias) is None, "no draft was ever made"
            assert client.get(f"/api/errors/{alias}").status_code == 404
            continue
        moved = client.get(f"/api/errors/{alias}", follow_redirects=False)
        assert moved.status_code == 308
        assert moved.headers["location"] == f"/api/errors/{record_id}"
        assert client.get(f"/api/errors/{alias}").json()["record"]["id"] == record_id
        page = client.get(f"/errors/{alias}", follow_redirects=False)
        assert page.status_code == 308
        assert page.headers["location"] == f"/errors/{record_id}"


@pytest.mark.parametrize(
    ("query", "record_id"),
    [("ring buffer", "b6bab2e17ae18394"), ("free more buffers than allocated", "c53f6de81577a6bc")],
)
def test_search_puts_the_curated_record_first_and_each_site_once(
    default_store, query, record_id
) -> None:
    session, matcher, _, _ = default_store
    hits = search.search(session, query, limit=50, matcher=matcher).hits
    assert hits[0].record.id == record_id
    curated = {site_keys.site_key(hit.record.record) for hit in hits if hit.record.id in SEED_SITES}
    drafts_of_curated_sites = [
        hit.record.id
        for hit in hits
        if hit.record.id not in SEED_SITES and site_keys.site_key(hit.record.record) in curated
    ]
    assert drafts_of_curated_sites == []
