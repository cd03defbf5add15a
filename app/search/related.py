"""Records related to a record: the same background, the same file, shared tags."""

from dataclasses import dataclass, field

from sqlmodel import Session

from app import store
from app.records import service as records
from app.records.service import StoredRecord

RELATED_LIMIT = 8


@dataclass(frozen=True, slots=True)
class RelatedRecord:
    """A record related to another one, and why."""

    record: StoredRecord
    reasons: list[str] = field(default_factory=list)


def related_records(
    session: Session, stored: StoredRecord, limit: int = RELATED_LIMIT
) -> list[RelatedRecord]:
    """Records sharing this one's background tag, file or tags, the closest first.

    A shared background (the same root cause) counts most, then the same file, then each
    shared tag.
    """
    record = stored.record
    index = store.backend(session)
    reasons: dict[str, list[str]] = {}
    weight: dict[str, int] = {}

    def add(record_id: str, points: int, reason: str) -> None:
        reasons.setdefault(record_id, []).append(reason)
        weight[record_id] = weight.get(record_id, 0) + points

    same = (
        ("background_tag", record.background_tag, 3, "same background: {}"),
        ("file_path", record.file_path, 2, "same file: {}"),
    )
    for column, value, points, reason in same:
        if value is not None:
            for record_id in index.sharing(session, column, value, stored.id, limit):
                add(record_id, points, reason.format(value))
    if record.tags:
        for record_id, shared, tags in index.sharing_tags(session, record.tags, stored.id, limit):
            add(record_id, shared, f"shared tags: {tags}")
    best = sorted(weight, key=lambda record_id: (-weight[record_id], record_id))[:limit]
    found = records.get_records(session, best)
    return [RelatedRecord(found[i], reasons[i]) for i in best if i in found]
