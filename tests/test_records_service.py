"""The store: import counts and idempotency, all-or-nothing, export byte round-trip, and
harvest's typed drafts stored as their documents would be."""

import json
from pathlib import Path

from sqlmodel import Session

from app.config import Settings
from app.records import service as records
from app.records.filters import RecordFilters
from app.records.model import ErrorRecord
from app.store.engine import open_store, unit_of_work
from tests.helpers.records import DATA_DIR, curated_records


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_import_counts_and_idempotency(session: Session, seed_records, tmp_path: Path) -> None:
    curated = len(curated_records())
    first = records.import_paths(session, [DATA_DIR])
    assert (first.counts.created, first.counts.updated, first.counts.unchanged) == (curated, 0, 0)
    version = records.dataset_version(session)
    second = records.import_paths(session, [DATA_DIR])
    assert (second.counts.created, second.counts.updated, second.counts.unchanged) == (
        0,
        0,
        curated,
    )
    assert records.dataset_version(session) == version

    changed = dict(seed_records["b6bab2e17ae18394"], severity="warning")
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(changed))
    third = records.import_paths(session, [path])
    assert (third.counts.created, third.counts.updated, third.counts.unchanged) == (0, 1, 0)
    assert records.dataset_version(session) > version
    assert records.get_record(session, "b6bab2e17ae18394").record.severity == "warning"


def test_import_with_a_broken_file_is_all_or_nothing(session, tmp_path, seed_records) -> None:
    good = _write_jsonl(tmp_path / "good.jsonl", list(seed_records.values()))
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": "0123456789abcdef", "repo": ')
    report = records.import_paths(session, [good, broken])
    assert not report.written
    assert [(r.file, r.position) for r in report.rejected] == [(str(broken), "line 1 column 36")]
    assert records.dataset_stats(session).records == 0


def test_partial_import_keeps_the_valid_records(session, tmp_path, seed_records) -> None:
    bad = dict(seed_records["edc4df790b100979"], id="00000000000000aa", severity="fatal")
    rows = [*seed_records.values(), bad]
    path = _write_jsonl(tmp_path / "mixed.jsonl", rows)
    report = records.import_paths(session, [path], partial=True)
    assert report.written
    assert report.counts.created == len(seed_records)
    [rejection] = report.rejected
    assert rejection.position == f"line {len(seed_records) + 1}"
    assert "severity" in rejection.reason
    assert records.get_record(session, "00000000000000aa") is None


def test_duplicate_ids_in_one_import_are_rejected(session, tmp_path, seed_records) -> None:
    record = seed_records["c53f6de81577a6bc"]
    path = _write_jsonl(tmp_path / "twice.jsonl", [record, record])
    report = records.import_paths(session, [path])
    assert not report.written
    assert "duplicate id" in report.rejected[0].reason


def test_seed_document_form_is_accepted(session, tmp_path: Path) -> None:
    seed = Path(__file__).parent / "fixtures" / "seeds" / "001_5a0e82c450f3f6b1.txt"
    path = tmp_path / "seed.json"
    path.write_text(seed.read_text())
    assert records.import_paths(session, [path]).counts.created == 1


def test_export_import_export_is_byte_identical(session, tmp_path: Path) -> None:
    records.import_paths(session, [DATA_DIR])
    first = "".join(records.export_lines(session))
    exported = tmp_path / "export.jsonl"
    exported.write_text(first, encoding="utf-8")

    other = Settings(database_url=f"sqlite:///{tmp_path / 'other.db'}")
    with unit_of_work(open_store(other)) as fresh:
        assert records.import_paths(fresh, [exported]).counts.created == len(curated_records())
        second = "".join(records.export_lines(fresh))
    assert first.encode() == second.encode()
    assert [json.loads(line)["id"] for line in first.splitlines()] == sorted(
        p.stem for p in DATA_DIR.glob("*.json")
    )


def test_stored_record_is_exactly_what_was_imported(session, seed_records) -> None:
    records.import_paths(session, [DATA_DIR])
    for record_id, record in seed_records.items():
        stored = records.get_record(session, record_id).record.model_dump()
        assert json.dumps(stored) == json.dumps(record)


def test_delete_cascades_to_tags(session) -> None:
    records.import_paths(session, [DATA_DIR])
    assert records.delete_record(session, "edc4df790b100979")
    session.commit()
    page = records.list_records(session, RecordFilters(tag="vmm"))
    assert page.total == 0
    assert not records.delete_record(session, "edc4df790b100979")


def test_typed_drafts_are_stored_as_their_documents_would_be(session, seed_records) -> None:
    documents = list(seed_records.values())
    typed = [ErrorRecord.model_validate(document) for document in documents]
    counts = records.write_drafts(session, typed, origin="harvest:x==1", gone_in="x==2")
    assert (counts.created, counts.updated, counts.unchanged) == (len(typed), 0, 0)
    for document in documents:
        stored = records.get_record(session, document["id"])
        assert stored.document == records.canonical_json(document)
        assert (stored.review_state, stored.origin, stored.gone_in) == (
            records.DRAFT,
            "harvest:x==1",
            "x==2",
        )
    again = records.write_drafts(session, typed, origin="harvest:x==2", gone_in=None)
    assert (again.created, again.updated, again.unchanged) == (0, 0, len(typed))
    stored = records.get_records(session, [document["id"] for document in documents])
    assert {(item.origin, item.gone_in) for item in stored.values()} == {("harvest:x==2", None)}
    records.mark_gone(session, [typed[0].id], "x==3")
    assert records.get_record(session, typed[0].id).gone_in == "x==3"
