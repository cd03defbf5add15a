"""`errkb curate ID`: a draft -> data/records/<id>.json and reproducers/<id>.py to finish.

The record file keeps everything the harvest knows (message, pattern, location, source
excerpt, link, tags) and puts `TO FILL: <what to write>` in each prose field a curator must
write; `errkb import` refuses the file, naming each such field, until they are written
(app.records.validation.unfilled_fields), and then imports it as reviewed like any curated record.
The reproducer follows reproducers/README.md, its target taken from the draft's release,
its scenario left to write: until then it fails, saying so.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from string import Template
from typing import Any

from sqlmodel import Session

from app import upstreams
from app.config import Settings
from app.harvest import drafts
from app.records import locations
from app.records import service as records
from app.records.model import ErrorRecord
from app.records.validation import TO_FILL, field_order

# What each prose field should say: the hint a curator reads in the TO FILL text.
PROSE_HINTS: dict[str, str] = {
    "documentation": "what the error means and why the upstream code raises it",
    "triggerScenarios": "the calls, arguments or states that make the code raise it",
    "commonSituations": "where users meet it in practice (deployments, configs, workloads)",
    "exampleFix": "Python code showing the fix, before and after",
}
PROSE_LIST_HINTS: dict[str, str] = {
    "solutions": "one way to resolve it (one string per solution)",
    "preventionTips": "how to avoid it in the first place (one string per tip)",
}
VERSION_REF = re.compile(r"v?(\d+(?:\.\d+)+\S*)")
MAX_PLACES_IN_HINT = 3
COMMENT_CHARS = 96  # generated lines stay within the linter's 100 columns
REPRODUCER_TEMPLATE = Template('''\
"""Reproducer for record $record_id ($error_class), written from its draft by errkb curate.

TO FILL: what the scenario does, why the upstream code raises there, and what the fix changes.
"""

# The message: $message
# Raised at $location:
#     $raising_line

import sys
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable as a plain script

from app.reproducers.harness import Target, main, require

RECORD_ID = "$record_id"
TARGET = Target(
    package=$package,
    version=$version,
    module=$module,
    classes=(),  # TO FILL: the upstream classes the scenario runs
)
DEVICES = ("cpu",)


def trigger(module: ModuleType, device: str) -> None:
    """TO FILL: call the upstream code so that it raises the record's error."""
    raise NotImplementedError("TO FILL: the trigger of record $record_id")


def fix(module: ModuleType, device: str) -> dict:
    """TO FILL: apply the record's fix in the same scenario; return the state checked."""
    require(False, f"TO FILL: the fix of record $record_id, of {module.__name__} on {device}")
    return {}


if __name__ == "__main__":
    sys.exit(main(RECORD_ID, TARGET, DEVICES, trigger, fix))
''')


class CurateError(ValueError):
    """A draft that cannot be scaffolded, or files that exist already; the message says."""


@dataclass(frozen=True, slots=True)
class Scaffold:
    """The two files written for a draft."""

    record_file: Path
    reproducer_file: Path


def scaffold_record(draft: dict[str, Any], code: dict[str, Any] | None = None) -> dict[str, Any]:
    """The draft with each prose field a curator must write marked TO FILL, in schema order;
    the hints carry what harvest read in the code, so the curator starts there."""
    marked = dict(draft)
    for key, hint in PROSE_HINTS.items():
        marked[key] = TO_FILL + hint + _code_hint(key, code or {})
    for key, hint in PROSE_LIST_HINTS.items():
        marked[key] = [TO_FILL + hint + _code_hint(key, code or {})]
    return {key: marked[key] for key in field_order() if key in marked}


def _places(places: list[dict[str, Any]]) -> str:
    return "; ".join(
        f"{p['filePath']}:{p['lineNumber']}" + (f" in {p['function']}" if p["function"] else "")
        for p in places[:MAX_PLACES_IN_HINT]
    )


def _code_hint(key: str, code: dict[str, Any]) -> str:
    """What the code context says that bears on one prose field, or nothing."""
    said = []
    if key == "documentation":
        if code.get("docstring"):
            said.append(f"{code['function']}: {code['docstring']}")
        if code.get("guard"):
            said.append(f"it raises when `{code['guard']}`")
        if code.get("translates"):
            said.append(f"it translates {', '.join(code['translates'])}")
    explained = code.get("explanation") or {}
    if key == "triggerScenarios":
        if explained.get("trigger"):
            said.append(explained["trigger"]["text"])
        said.extend(
            f"reached from {entry['label']} ({' -> '.join(entry['calls'])})"
            for entry in explained.get("entryPoints", [])
        )
        if code.get("callers"):
            said.append(f"called from {_places(code['callers'])}")
    elif key == "solutions":
        said.extend(f"upstream advises: {advice['text']}" for advice in explained.get("advice", []))
        said.extend(_setting_hint(setting) for setting in explained.get("settings", []))
        if code.get("handlers"):
            said.append(f"upstream catches it at {_places(code['handlers'])}")
    return f" (the code: {'; '.join(said)})" if said else ""


def _setting_hint(setting: dict[str, Any]) -> str:
    """A setting the raise site reads, as the curator would tell a user to change it."""
    default = f", default {setting['default']}" if setting.get("default") is not None else ""
    return f"the {setting['kind']} {setting['typedAs']}{default}"


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= COMMENT_CHARS else line[: COMMENT_CHARS - 3] + "..."


def _module(record: ErrorRecord) -> str | None:
    """The dotted module of the raise site (`python/sglang/x.py` -> `sglang.x`)."""
    if not record.file_path or not record.file_path.endswith(".py"):
        return None
    path = record.file_path.removeprefix(upstreams.path_prefix(record.repo))
    parts = PurePosixPath(path).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _version(stored: records.StoredRecord, record: ErrorRecord) -> str | None:
    """The release the draft was harvested from: its origin spec, else its link's tag."""
    spec = stored.origin.removeprefix(drafts.ORIGIN_PREFIX)
    if "==" in spec:
        return spec.partition("==")[2]
    ref = (record.github_url or "").partition("/blob/")[2].split("/", 1)[0]
    found = VERSION_REF.fullmatch(ref)
    return found.group(1) if found else None


def _raising_line(record: ErrorRecord) -> str:
    start, line = record.source_code_start, record.line_number
    if record.source_code is None or start is None or line is None:
        return "(no source excerpt)"
    lines = record.source_code.split("\n")
    return lines[line - start] if 0 <= line - start < len(lines) else "(outside the excerpt)"


def reproducer_script(stored: records.StoredRecord) -> str:
    """A reproducer script for the record, its scenario left TO FILL."""
    record = stored.record
    module = _module(record)
    version = _version(stored, record)
    location = f"{record.file_path}:{record.line_number}" if record.file_path else "?"
    return REPRODUCER_TEMPLATE.substitute(
        record_id=stored.id,
        error_class=record.error_class,
        message=_one_line(record.error_message),
        location=_one_line(location),
        raising_line=_one_line(_raising_line(record)),
        package=json.dumps(module.split(".")[0] if module else TO_FILL + "package"),
        version=json.dumps(version or TO_FILL + "version"),
        module=json.dumps(module or TO_FILL + "module"),
    )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text, encoding="utf-8", newline="\n")
    temporary.replace(path)


def curate(session: Session, settings: Settings, record_id: str, force: bool) -> Scaffold:
    """Write the record file and the reproducer of a draft; refuse to overwrite unless forced."""
    stored = records.get_record(session, record_id)
    if stored is None:
        raise CurateError(
            f"no record {record_id}; an unexplained template (tpl-...) has no draft to start "
            "from: harvest the release that raises it first"
        )
    if stored.review_state != records.DRAFT:
        raise CurateError(f"record {record_id} is reviewed already: edit its file instead")
    scaffold = Scaffold(
        settings.data_dir / f"{record_id}.json", settings.reproducers_dir / f"{record_id}.py"
    )
    existing = [str(p) for p in (scaffold.record_file, scaffold.reproducer_file) if p.exists()]
    if existing and not force:
        raise CurateError(f"already there: {', '.join(existing)} (--force overwrites)")
    known = locations.record_locations(session, [record_id]).get(record_id, [])
    code = next((loc.context for loc in reversed(known) if loc.context), None)
    document = scaffold_record(stored.record.model_dump(), code)
    _write(scaffold.record_file, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    _write(scaffold.reproducer_file, reproducer_script(stored))
    return scaffold
