"""A matcher on a store holding data/, and records made from one of them: what the tests of
the matcher, the match pipeline and the reply's caps start from."""

import copy
from collections.abc import Iterator
from contextlib import contextmanager

from sqlmodel import Session

from app.config import Settings
from app.matching.matcher import Matcher
from app.records import service as records
from app.store.engine import open_store, unit_of_work
from tests.helpers.records import DATA_DIR


@contextmanager
def data_store(settings: Settings) -> Iterator[tuple[Session, Matcher]]:
    """A session and matcher on a store holding data/."""
    with unit_of_work(open_store(settings)) as session:
        records.import_paths(session, [DATA_DIR])
        yield session, Matcher(session.get_bind(), settings.cache_dir, 1 << 20)


def widget_record(session: Session, record_id: str, pattern: str) -> dict:
    """A record of data/ made into a ValueError about a widget, with this message pattern."""
    base = copy.deepcopy(records.get_record(session, "c53f6de81577a6bc").record.model_dump())
    return base | {
        "id": record_id,
        "errorClass": "ValueError",
        "errorMessage": "widget {name} exploded",
        "messagePattern": pattern,
    }
