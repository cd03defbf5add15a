"""What the code says about a record, as the record page and GET /api/errors/{id} show it.

Harvest stores each site's explanation (settings, advice, trigger: app.harvest.advice)
in the code context of its newest location. What only the releases together tell, the
release that brought or changed the site, is read here from its locations and history,
so that harvesting an older release later adds to it without re-explaining anything.
Its shape is the wire's (app.wire.explanation).
"""

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from sqlmodel import Session

from app.records import locations, release_history
from app.records.locations import Location
from app.records.release_history import History
from app.wire.explanation import (
    Advice,
    EntryPoint,
    ExplainedSetting,
    Explanation,
    ExplanationSource,
    Statement,
)


def _source(raw: dict[str, Any], release: str | None) -> ExplanationSource:
    return ExplanationSource(
        release=release,
        ref=raw["ref"],
        file_path=raw["filePath"],
        line_number=raw.get("lineNumber"),
        github_url=raw.get("githubUrl"),
    )


def _changes(
    known: Sequence[Location], history: Sequence[History], harvested: Sequence[str]
) -> list[Statement]:
    """The releases that brought, changed or removed the site, from its history. Each
    names the harvested release on either side: a release between them (0.4.0 and 0.4.1,
    when 0.3.3 and 0.4.3 are harvested) may be the one that made the change."""
    by_release = {location.release: location for location in known}
    statements = []
    for item in history:
        name = item.package
        versions = [
            label.partition("==")[2] for label in harvested if label.startswith(name + "==")
        ]
        first = item.present[0]
        if versions and first != versions[0] and first in versions:
            before = versions[versions.index(first) - 1]
            statements.append(
                Statement(
                    text=f"first raised in {name} {first}: {before}, the release harvested "
                    "before it, does not raise it",
                    source=ExplanationSource.model_validate(by_release[f"{name}=={first}"]),
                )
            )
        statements.extend(_guard_changes(name, known))
        if item.changed_in is None:
            continue
        last = item.present[-1]
        at = by_release.get(f"{name}=={item.changed_in}") or by_release[f"{name}=={last}"]
        if item.text.endswith(f"changed in {item.changed_in}"):
            text = (
                f"the message changed in {name} {item.changed_in}: {last} raises it here, "
                f"{item.changed_in} raises something else"
            )
        else:
            # The check may live on in another file: only this site is known to be gone.
            text = (
                f"gone in {name} {item.changed_in}: {last} raises it here, "
                f"{item.changed_in} no longer does"
            )
        statements.append(Statement(text=text, source=ExplanationSource.model_validate(at)))
    return statements


def _guard_changes(package: str, known: Sequence[Location]) -> list[Statement]:
    """The releases of a package whose check at the site reads differently from the
    release before (among those that kept their guard): the condition that raises changed."""
    guarded = [
        (location, location.context["guard"])
        for location in known
        if location.release.startswith(package + "==")
        and not location.gone
        and location.context
        and location.context.get("guard")
    ]
    statements = []
    for (earlier, before), (location, after) in pairwise(guarded):
        if " ".join(before.split()) != " ".join(after.split()):
            version = location.release.partition("==")[2]
            since = earlier.release.partition("==")[2]
            statements.append(
                Statement(
                    text=f"the guard changed in {package} {version} (since {since}): "
                    f"`{before}` became `{after}`",
                    source=ExplanationSource.model_validate(location),
                )
            )
    return statements


def record_explanation(
    known: Sequence[Location], history: Sequence[History], harvested: Sequence[str]
) -> Explanation | None:
    """The explanation of a record: what its newest explained location stored at harvest,
    and the release changes its history tells (those alone when no location kept an
    explanation: a site only older releases raise, harvested after a newer one); None when
    there is neither."""
    latest = next(
        (
            location
            for location in reversed(known)
            if location.context and "explanation" in location.context
        ),
        None,
    )
    changes = _changes(known, history, harvested)
    if latest is None or latest.context is None:
        present = [location for location in known if not location.gone]
        if not changes or not present:
            return None
        return Explanation(
            release=present[-1].release,
            settings=[],
            advice=[],
            trigger=None,
            changes=changes,
            entry_points=[],
        )
    raw = latest.context["explanation"]
    release = latest.release
    return Explanation(
        release=release,
        settings=[
            ExplainedSetting(
                name=item["name"],
                kind=item["kind"],
                typed_as=item["typedAs"],
                default=item["default"],
                help=item["help"],
                via=item["via"],
                source=_source(item["source"], release),
            )
            for item in raw.get("settings", [])
        ],
        advice=[Advice(**item) for item in raw.get("advice", [])],
        trigger=Statement(
            text=raw["trigger"]["text"], source=_source(raw["trigger"]["source"], release)
        )
        if raw.get("trigger")
        else None,
        changes=changes,
        entry_points=[
            EntryPoint(
                label=item["label"],
                calls=item["calls"],
                source=_source(item["source"], release),
            )
            for item in raw.get("entryPoints", [])
        ],
    )


def explanations(
    session: Session, record_ids: Sequence[str], messages: Sequence[str]
) -> dict[str, Explanation]:
    """The explanations of a few records (a match's results), by id; each record's
    message tells its history apart from another site's."""
    known = locations.record_locations(session, record_ids)
    harvested = release_history.harvested_releases(session)
    found = {}
    for record_id, message in zip(record_ids, messages, strict=True):
        located = known.get(record_id, [])
        history = release_history.release_history(session, message, located, harvested)
        explained = record_explanation(located, history, harvested)
        if explained is not None:
            found[record_id] = explained
    return found
