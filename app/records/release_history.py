"""Which harvested releases of a package raise a record's message at its site, and where
that changed: read from the record's locations (app.records.locations) and the releases
harvested into the store."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlmodel import Session, col

from app import store
from app.records import dataset_cache
from app.records.locations import Location
from app.records.site_keys import release_order
from app.store.tables import DatasetState, Record, RecordLocation

CHANGED_HEAD_CHARS = 20  # a message beginning like this one in the next release rewords it


@dataclass(frozen=True, slots=True)
class History:
    """The releases of one package that raise a record's message at its site.

    ``present`` are the versions whose harvest found the site, ``changed_in`` the first
    harvested version after the last of them, where the message changed (the site's
    function raises something else) or the site is gone. ``text`` says it in one line:
    "in vllm 0.12.0–0.32.0; changed in 0.33.0".
    """

    package: str
    present: tuple[str, ...]
    changed_in: str | None
    text: str


def harvested_releases(session: Session) -> list[str]:
    """The `name==version` releases harvested into the store, oldest first."""
    prefix = "harvested:"
    keys = session.execute(
        select(col(DatasetState.key)).where(col(DatasetState.key).startswith(prefix))
    ).scalars()
    labels = [key.removeprefix(prefix) for key in keys if "==" in key]
    return sorted(labels, key=release_order)


def release_history(
    session: Session, message: str, known: Sequence[Location], harvested: Sequence[str]
) -> list[History]:
    """Per package, the runs of harvested releases where the site raises the record's
    message, and the release that changed it; a release harvested without the site counts
    as one that does not raise it. Only `name==version` releases have an order to tell.

    Kept per dataset version (app.records.dataset_cache): telling "changed" from "gone" asks the
    store about other records' sites, once per matched record and record page otherwise."""
    sites = tuple((loc.release, loc.file_path, loc.function, loc.gone) for loc in known)
    key = ("history", message, sites, tuple(harvested))
    version = dataset_cache.dataset_version(session)
    return dataset_cache.memo.get(
        session, version, key, lambda: _release_history(session, message, known, harvested)
    )


def _release_history(
    session: Session, message: str, known: Sequence[Location], harvested: Sequence[str]
) -> list[History]:
    histories = []
    present_by_package: dict[str, set[str]] = defaultdict(set)
    last_location: dict[str, Location] = {}
    for location in known:
        name, _, version = location.release.partition("==")
        if version and not location.gone:
            present_by_package[name].add(version)
            last_location[name] = location
    for name, present in sorted(present_by_package.items()):
        versions = [
            label.partition("==")[2] for label in harvested if label.startswith(name + "==")
        ]
        runs: list[list[str]] = []
        previous_present = False
        for version in versions:
            if version in present:
                if previous_present:
                    runs[-1].append(version)
                else:
                    runs.append([version])
            previous_present = version in present
        if not runs:
            continue
        later = versions[versions.index(runs[-1][-1]) + 1 :]
        changed_in = later[0] if later else None
        shown = ", ".join(run[0] if len(run) == 1 else f"{run[0]}–{run[-1]}" for run in runs)
        text = f"in {name} {shown}"
        if changed_in is not None:
            raises_other = _site_raises_other(
                session, last_location[name], message, name, changed_in
            )
            verb = "changed" if raises_other else "gone"
            text += f"; {verb} in {changed_in}"
        ordered = tuple(version for run in runs for version in run)
        histories.append(History(name, ordered, changed_in, text))
    return histories


def _site_raises_other(
    session: Session, location: Location, message: str, name: str, version: str
) -> bool:
    """Whether the release raises another message where this one was: in the same function
    of the file, or one that begins like it anywhere in the file (reworded and moved)."""
    statement = select(col(RecordLocation.record_id), col(RecordLocation.function)).where(
        col(RecordLocation.release) == f"{name}=={version}",
        col(RecordLocation.file_path) == location.file_path,
        col(RecordLocation.gone).is_(False),
    )
    rows = session.execute(statement).all()
    if location.function is not None and any(row.function == location.function for row in rows):
        return True
    head = message.split("{", 1)[0][:CHANGED_HEAD_CHARS]
    if len(head) < CHANGED_HEAD_CHARS:
        return False
    ids = [row.record_id for row in rows]
    return any(
        text.startswith(head)
        for start in range(0, len(ids), store.SQL_CHUNK)
        for text in session.execute(
            select(col(Record.error_message)).where(
                col(Record.id).in_(ids[start : start + store.SQL_CHUNK])
            )
        ).scalars()
    )
