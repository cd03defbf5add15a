"""One record per raise site, and where that site is in every harvested release.

A raise site is known by its key: the repository, the file, the exception class (its last
dotted name) and the message template compared structurally, so that `(.+?)`,
`(?P<control_offset>(?s:.+?))` and `{control_offset}` are the same variable part. Several
sites of one key (the same message raised twice in a file) are told apart by the enclosing
function, then by the nearest line.

A reviewed record claims the site of its key. Harvest then records the site's location in
the release on the record instead of creating a draft, and a draft already stored for the
site is absorbed: its locations move to the record and its id stays as an alias, so a link
someone shared still answers. The record's own document is never touched: it keeps the
location it was written at, and the rows here say where the site is in each release.

Keys that differ (a renamed file, a changed message, another class) stay apart, so a
curated record is never merged into the wrong site.
"""

import hashlib
import json
import keyword
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlmodel import Session, col

from app import store
from app.patterns import AT, LITERAL, parsed
from app.records import dataset_cache
from app.records.model import ErrorRecord, parse_record
from app.store.tables import (
    DatasetState,
    DriftCheck,
    Record,
    RecordAlias,
    RecordLocation,
    ReproducerRun,
)

SITE_KEY_HEX = 32
LOCATED_PATTERN = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>\(\?s:\.\+\?\)\)")
CHANGED_HEAD_CHARS = 20  # a message beginning like this one in the next release rewords it
VARIABLE = "\x00"  # one variable part of a template, whatever its spelling
_TEMPLATE_FIELD = re.compile(r"\{[^{}]*\}")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)")
# A statement that calls a function (`raise_error_or_warn(`, `self._fail(`, `x = check(`).
_CALL = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\s*=\s*)?(?:[A-Za-z_][\w.]*\.)?([A-Za-z_]\w*)\(")
_VERSION_PART = re.compile(r"(\d+)")
REVIEWED, DRAFT = "reviewed", "draft"


def short_class(name: str) -> str:
    """`torch.OutOfMemoryError` -> `OutOfMemoryError`."""
    return name.rsplit(".", 1)[-1]


def message_template(pattern: str | None, message: str) -> str:
    """The literal text of a message with each variable part as one VARIABLE.

    Read from the pattern (a capture group, a class, a repeat: all variable), so that the
    regex spellings of one template agree; a pattern Python cannot parse (RE2-only syntax)
    falls back to the message's `{placeholders}`.
    """
    tree = parsed(pattern) if pattern is not None else None
    if tree is None:
        return _TEMPLATE_FIELD.sub(VARIABLE, message)
    out: list[str] = []
    for op, value in tree:
        if op is LITERAL:
            out.append(chr(value))
        elif op is not AT and (not out or out[-1] != VARIABLE):
            out.append(VARIABLE)
    return "".join(out)


def matched_by_location(pattern: str) -> bool:
    """Whether a pattern is harvest's spelling of a message built at run time: one named
    variable part, `(?P<msg>(?s:.+?))`, and nothing else. Such a record is found by where it
    raises (the innermost frame), never by its text, and its pattern stays out of the message
    index. Any other pattern that matches every line is refused."""
    return LOCATED_PATTERN.fullmatch(pattern) is not None


def site_key(record: ErrorRecord) -> str | None:
    """The key of the raise site a record describes; None when it names no file."""
    if not record.file_path:
        return None
    parts = (
        record.repo,
        record.file_path,
        short_class(record.error_class),
        message_template(record.message_pattern, record.error_message),
    )
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:SITE_KEY_HEX]


def raising_function(record: ErrorRecord) -> str | None:
    """The function around the record's raise line, read from its source excerpt."""
    source, line, start = record.source_code, record.line_number, record.source_code_start
    if source is None or line is None or start is None:
        return None
    for text in reversed(source.split("\n")[: line - start + 1]):
        found = _DEF.match(text)
        if found:
            return found.group(1)
    return None


def called_helper(record: ErrorRecord) -> str | None:
    """The function the record's raise line calls, when the site is a call of a raising
    helper (SGLang's `raise_error_or_warn(self, strict, counter, message)`) rather than a
    `raise` or an `assert`: the helper raises the message in its own file, so the innermost
    frame of a traceback is the helper's, not the record's."""
    source, line, start = record.source_code, record.line_number, record.source_code_start
    if source is None or line is None or start is None:
        return None
    lines = source.split("\n")
    if not 0 <= line - start < len(lines):
        return None
    found = _CALL.match(lines[line - start])
    return found.group(1) if found and not keyword.iskeyword(found.group(1)) else None


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

    def slim(self, keep_explanation: bool = False) -> "Location":
        """Where the site is, without its source excerpt and code context: what an older
        release's location keeps, since the record shows the newest. The guard stays (one
        line): comparing it across releases tells when the check itself changed. The
        explanation stays too where no newer release raises the site (`keep_explanation`):
        this location is then the record's newest."""
        context = self.context or {}
        kept = {key: context[key] for key in ("guard", "explanation") if context.get(key)}
        if not keep_explanation:
            kept.pop("explanation", None)
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


def release_order(release: str) -> tuple[Any, ...]:
    """Sort key of release labels with numbers compared as numbers (0.9 before 0.10)."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part)
        for part in _VERSION_PART.split(release)
    )


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
        for condition in _in_chunks(col(Record.id), ids)
        for text in session.execute(select(col(Record.error_message)).where(condition)).scalars()
    )
