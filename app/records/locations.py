"""One record per raise site, and where that site is in every harvested release: the
stored locations, the claims of reviewed records on harvested sites, and absorbing drafts.

A reviewed record claims the site of its key (app.records.site_keys). Several sites of one
key (the same message raised twice in a file) are told apart by the enclosing function,
then by the nearest line. Harvest then records the site's location in the release on the
record instead of creating a draft, and a draft already stored for the site is absorbed:
its locations move to the record and its id stays as an alias, so a link someone shared
still answers. The record's own document is never touched: it keeps the location it was
written at, and the rows here say where the site is in each release.
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlmodel import Session, col

from app import store
from app.records.model import ErrorRecord, parse_record
from app.records.site_keys import raising_function, release_order
from app.store.tables import DriftCheck, Record, RecordAlias, RecordLocation, ReproducerRun

REVIEWED, DRAFT = "reviewed", "draft"
# What the newest location of a site keeps of its code context beside the guard.
NEWEST_CONTEXT = ("explanation", "library", "sourceFile", "sourceLine")


@dataclass(frozen=True, slots=True)
class Location:
    """Where a raise site is in one release; `gone` when the release no longer has it."""

    release: str
    ref: str
    file_path: str
    line_number: int | None = None
    function: str | None = None
    source_code: str | None = None
    source_code_start: int | None = None
    source_code_end: int | None = None
    github_url: str | None = None
    gone: bool = False
    context: dict[str, Any] | None = None  # what the code checks, callers, handlers

    @classmethod
    def of(
        cls,
        record: ErrorRecord,
        release: str,
        function: str | None,
        context: dict[str, Any] | None = None,
    ) -> "Location":
        """The location a harvested record (a draft of `release`) gives."""
        if record.analyzed_sha is None or record.file_path is None:
            raise ValueError(f"record {record.id} names no commit or file: it was not harvested")
        return cls(
            release=release,
            ref=record.analyzed_sha,
            file_path=record.file_path,
            line_number=record.line_number,
            function=function,
            source_code=record.source_code,
            source_code_start=record.source_code_start,
            source_code_end=record.source_code_end,
            github_url=record.github_url,
            context=context,
        )

    def slim(self, newest: bool = False) -> "Location":
        """Where the site is, without its source excerpt and code context: what an older
        release's location keeps, since the record shows the newest. The guard stays (one
        line): comparing it across releases tells when the check itself changed. Where no
        newer release raises the site (`newest`), this location is the record's newest: its
        explanation stays too, and so does where a compiled library's literal was compiled
        from (its library, source file and line: the only place the record has)."""
        context = self.context or {}
        wanted = ("guard", *NEWEST_CONTEXT) if newest else ("guard",)
        kept = {key: context[key] for key in wanted if context.get(key)}
        return replace(
            self,
            source_code=None,
            source_code_start=None,
            source_code_end=None,
            context=kept or None,
        )

    def status(self, record: ErrorRecord) -> str:
        """Against the record as written: same line, moved (or to another file), or gone."""
        if self.gone:
            return "gone"
        same = self.file_path == record.file_path and self.line_number == record.line_number
        return "same" if same else "moved"


def record_locations(session: Session, record_ids: Iterable[str]) -> dict[str, list[Location]]:
    """The known locations of these records, by id, oldest release first."""
    found: dict[str, list[Location]] = defaultdict(list)
    ids = list(record_ids)
    columns = [RecordLocation.record_id, *(getattr(RecordLocation, f) for f in _COLUMNS)]
    for start in range(0, len(ids), store.SQL_CHUNK):
        statement = select(*columns, col(RecordLocation.code_context)).where(
            col(RecordLocation.record_id).in_(ids[start : start + store.SQL_CHUNK])
        )
        for record_id, *values, context in session.execute(statement):
            fields = dict(zip(_COLUMNS, values, strict=True))
            found[record_id].append(Location(**fields, context=_loaded(context)))
    for locations in found.values():
        locations.sort(key=lambda location: release_order(location.release))
    return dict(found)


_COLUMNS = tuple(name for name in Location.__dataclass_fields__ if name != "context")


def _loaded(context: str | None) -> dict[str, Any] | None:
    return json.loads(context) if context else None


def location_row(record_id: str, location: Location) -> dict[str, Any]:
    """The record_locations row of a record's location."""
    row = {"record_id": record_id} | {name: getattr(location, name) for name in _COLUMNS}
    context = location.context
    return row | {"code_context": json.dumps(context, ensure_ascii=False) if context else None}


def put_release(session: Session, release: str, located: Mapping[str, Location]) -> None:
    """Make these the locations of these record ids in `release`, leaving the release's
    other rows as they are: a harvest writes a release's locations batch by batch."""
    ids = list(located)
    for condition in _in_chunks(col(RecordLocation.record_id), ids):
        session.execute(
            delete(RecordLocation).where(col(RecordLocation.release) == release, condition)
        )
    rows = [location_row(record_id, location) for record_id, location in located.items()]
    for start in range(0, len(rows), store.SQL_CHUNK):
        session.execute(insert(RecordLocation), rows[start : start + store.SQL_CHUNK])


def drop_release_except(session: Session, release: str, kept: Set[str]) -> None:
    """Remove the locations in `release` of every record not in `kept`: after a harvest has
    put its batches, what an earlier harvest of the release located and this one did not."""
    statement = select(col(RecordLocation.record_id)).where(col(RecordLocation.release) == release)
    dropped = [i for i in session.execute(statement).scalars() if i not in kept]
    for condition in _in_chunks(col(RecordLocation.record_id), dropped):
        session.execute(
            delete(RecordLocation).where(col(RecordLocation.release) == release, condition)
        )


def known_lines(session: Session) -> list[tuple[str, str, int | None]]:
    """(record id, file, line) of every location a site still has in some release; once
    each, however many releases share it (forty releases, one line each)."""
    statement = (
        select(
            col(RecordLocation.record_id),
            col(RecordLocation.file_path),
            col(RecordLocation.line_number),
        )
        .where(col(RecordLocation.gone).is_(False))
        .distinct()
    )
    return [tuple(row) for row in session.execute(statement)]


def resolve_alias(session: Session, record_id: str) -> str | None:
    """The id of the record that absorbed this one, if it was absorbed."""
    if store.names_nothing(record_id):
        return None
    statement = select(col(RecordAlias.record_id)).where(col(RecordAlias.alias_id) == record_id)
    return session.execute(statement).scalar_one_or_none()


@dataclass(frozen=True, slots=True)
class Site:
    """A raise site as claiming compares them: its key, function and line."""

    id: str
    key: str | None
    function: str | None
    line: int | None


def _closest(claimer: Site, sites: Sequence[Site]) -> Site:
    """The site a record claims among those of its key: same function, then nearest line."""
    return min(
        sites,
        key=lambda site: (
            claimer.function is None or site.function != claimer.function,
            abs((site.line or 0) - (claimer.line or 0)),
            site.id,
        ),
    )


def _reviewed_sites(session: Session, *conditions: Any) -> list[Site]:
    """Reviewed records under these conditions, with the function of their latest location."""
    rows = session.execute(
        select(col(Record.id), col(Record.site_key), col(Record.document)).where(
            col(Record.review_state) == REVIEWED, *conditions
        )
    ).all()
    located = record_locations(session, [row.id for row in rows])
    sites = []
    for record_id, key, document in rows:
        record = parse_record(document)
        latest = [loc for loc in located.get(record_id, ()) if not loc.gone]
        function = latest[-1].function if latest else raising_function(record)
        line = latest[-1].line_number if latest else record.line_number
        sites.append(Site(record_id, key, function, line))
    return sites


def _in_chunks(column: Any, values: Sequence[Any]) -> Iterable[Any]:
    for start in range(0, len(values), store.SQL_CHUNK):
        yield column.in_(values[start : start + store.SQL_CHUNK])


def find_claims(session: Session, harvested: Sequence[Site]) -> dict[str, str]:
    """Which harvested sites reviewed records claim: harvested draft id -> record id.

    A reviewed record with the draft's own id (a curator saved the draft) or that absorbed
    that id claims it outright; otherwise each reviewed record claims the closest site of
    its key, one site each.
    """
    ids = [site.id for site in harvested]
    claims: dict[str, str] = {}
    for condition in _in_chunks(Record.id, ids):
        statement = select(col(Record.id)).where(col(Record.review_state) == REVIEWED, condition)
        claims.update((record_id, record_id) for record_id in session.execute(statement).scalars())
    for condition in _in_chunks(RecordAlias.alias_id, ids):
        claims.update(
            session.execute(
                select(col(RecordAlias.alias_id), col(RecordAlias.record_id)).where(condition)
            ).all()
        )
    by_key: dict[str, list[Site]] = defaultdict(list)
    for site in harvested:
        if site.key is not None and site.id not in claims:
            by_key[site.key].append(site)
    keys = list(by_key)
    claimers = [s for c in _in_chunks(Record.site_key, keys) for s in _reviewed_sites(session, c)]
    taken = set(claims.values())
    for claimer in sorted(claimers, key=lambda site: site.id):
        if claimer.key is None or claimer.id in taken:
            continue
        open_sites = [site for site in by_key[claimer.key] if site.id not in claims]
        if not open_sites:
            continue
        claims[_closest(claimer, open_sites).id] = claimer.id
    return claims


def absorb(session: Session, draft_id: str, record_id: str) -> None:
    """Merge a stored draft into the reviewed record that claims its site; nothing is lost.

    The draft's locations in releases the record has none for, its reproducer runs and
    drift checks move to the record; its id (and the ids it had absorbed) become aliases.
    """
    have = set(
        session.execute(
            select(col(RecordLocation.release)).where(col(RecordLocation.record_id) == record_id)
        ).scalars()
    )
    moving = col(RecordLocation.record_id) == draft_id
    session.execute(
        update(RecordLocation)
        .where(moving, col(RecordLocation.release).not_in(have))
        .values(record_id=record_id)
    )
    for table in (ReproducerRun, DriftCheck):
        session.execute(
            update(table).where(col(table.record_id) == draft_id).values(record_id=record_id)
        )
    session.execute(
        update(RecordAlias)
        .where(col(RecordAlias.record_id) == draft_id)
        .values(record_id=record_id)
    )
    session.execute(delete(Record).where(col(Record.id) == draft_id))
    session.execute(insert(RecordAlias).values(alias_id=draft_id, record_id=record_id))


def absorb_duplicates(session: Session, record_ids: Sequence[str] | None = None) -> int:
    """Absorb stored drafts whose site a reviewed record claims; how many were absorbed.

    Runs after a reviewed record is written (a harvest may have come first) and when a
    database made before one record per raise site is upgraded. A draft found in a release
    where the record has its own location is another site of the same key, and stays.
    """
    conditions = [col(Record.site_key).is_not(None)]
    claimers = (
        [
            s
            for c in _in_chunks(Record.id, list(record_ids))
            for s in _reviewed_sites(session, c, *conditions)
        ]
        if record_ids is not None
        else _reviewed_sites(session, *conditions)
    )
    # The drafts of every claimed key in a few queries, not one per claimer: an import of
    # 50k records asked 50k times, a round trip each on PostgreSQL. Selected by key alone
    # and told apart here: with the review state in the query SQLite walked the index of
    # review states, every draft of the store (24 ms on 17k drafts, in each API write).
    drafts: dict[str, list[tuple[str, str]]] = defaultdict(list)
    keys = sorted({claimer.key for claimer in claimers if claimer.key is not None})
    for condition in _in_chunks(Record.site_key, keys):
        statement = select(
            col(Record.site_key), col(Record.id), col(Record.document), col(Record.review_state)
        ).where(condition)
        for key, draft_id, document, state in session.execute(statement):
            if state == DRAFT:
                drafts[key].append((draft_id, document))
    absorbed, gone = 0, set()
    for claimer in sorted(claimers, key=lambda site: site.id):
        if claimer.key is None:
            continue  # chosen by a key that is set: a guard for the type only
        rows = [row for row in drafts.get(claimer.key, ()) if row[0] not in gone]
        if not rows:
            continue
        located = record_locations(session, [claimer.id, *(draft_id for draft_id, _ in rows)])
        own = {loc.release for loc in located.get(claimer.id, ()) if not loc.gone}
        sites = []
        for draft_id, document in rows:
            releases = {loc.release for loc in located.get(draft_id, ()) if not loc.gone}
            if releases & own:
                continue
            record = parse_record(document)
            function = raising_function(record)
            sites.append(Site(draft_id, claimer.key, function, record.line_number))
        if sites:
            draft_id = _closest(claimer, sites).id
            absorb(session, draft_id, claimer.id)
            gone.add(draft_id)
            absorbed += 1
    return absorbed
