"""Reading record files (.json, .jsonl, .jsonl.gz) with the position of every record in them.

Import reports each rejected record by file and position (line of a .jsonl, index in a
.json list), so this module yields positions along with the records. Text that is
no JSON, nests too deeply or holds absurd numbers is reported the same way, never raised;
a JSON Schema (such as data/record.schema.json beside the records) and a file of reproducer
runs (data/runs/) are skipped, and said so.
"""

import gzip
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.jsontext import JsonTextError, parse_json

RECORD_SUFFIXES = (".json", ".jsonl", ".jsonl.gz")
LINES_SUFFIXES = (".jsonl", ".jsonl.gz")  # one JSON document a line
MAX_UNPACKED_BYTES = 512 * 2**20  # a .jsonl.gz that unpacks to more is refused, not read
WHOLE_FILE = "(whole file)"
SCHEMA_SKIPPED = "a JSON Schema ($schema), not records"
RUNS_SKIPPED = "reproducer runs, not records (errkb runs import keeps them)"


@dataclass(frozen=True, slots=True)
class LoadedRecord:
    """One record read from a file, the reason the text at that position is no record, or
    why the whole file was skipped."""

    file: str
    position: str
    record: Any = None
    error: str | None = None
    skipped: str | None = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.position}"


def record_files(paths: Iterable[Path]) -> Iterator[Path]:
    """The record files named or found (recursively, sorted) in the given paths."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.name.endswith(RECORD_SUFFIXES))
        else:
            yield path


def load_documents(path: Path) -> Iterator[LoadedRecord]:
    """Each JSON document of one file with its position: each line of a .jsonl (.jsonl.gz),
    the whole of another file; unreadable text becomes a LoadedRecord with an error. The
    reader beneath record files and run files (app/reproducers/runs.py) alike."""
    name = str(path)
    try:
        text = _read_text(path)
    except (OSError, UnicodeDecodeError, EOFError, ValueError) as error:
        yield LoadedRecord(name, WHOLE_FILE, error=f"cannot read file: {error}")
        return
    if path.name.endswith(LINES_SUFFIXES):
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                yield _decode(name, f"line {number}", line)
        return
    yield _decode(name, WHOLE_FILE, text)


def load_records(path: Path) -> Iterator[LoadedRecord]:
    """Each record in one file; unreadable text becomes a LoadedRecord with an error. A
    JSON Schema, or a file of reproducer runs (data/runs/ beside data/records), is skipped
    whole and said so; a seed document's record is taken out of its envelope."""
    for loaded in load_documents(path):
        document = loaded.record
        if loaded.error is not None:
            yield loaded
        elif isinstance(document, dict) and "$schema" in document:
            yield LoadedRecord(loaded.file, WHOLE_FILE, skipped=SCHEMA_SKIPPED)
        elif _is_run(document):
            yield LoadedRecord(loaded.file, WHOLE_FILE, skipped=RUNS_SKIPPED)
            return
        elif isinstance(document, dict) and "record" in document and "datasetVersion" in document:
            yield LoadedRecord(loaded.file, loaded.position, record=document["record"])
        elif isinstance(document, list) and loaded.position == WHOLE_FILE:
            for index, item in enumerate(document):
                yield LoadedRecord(loaded.file, f"[{index}]", record=item)
        else:
            yield loaded


def _is_run(document: Any) -> bool:
    """Whether a document is a reproducer run (a run file's line), not a record."""
    return isinstance(document, dict) and {"startedAt", "status", "durationS"} <= set(document)


def _read_text(path: Path) -> str:
    """A file's text; a `.gz` one unpacked (gzip), up to MAX_UNPACKED_BYTES."""
    if not path.name.endswith(".gz"):
        return path.read_text(encoding="utf-8")
    with gzip.open(path, "rb") as unpacked:
        data = unpacked.read(MAX_UNPACKED_BYTES + 1)
    if len(data) > MAX_UNPACKED_BYTES:
        raise ValueError(f"unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MiB")
    return data.decode("utf-8")


def _decode(file: str, position: str, text: str) -> LoadedRecord:
    try:
        value = parse_json(text)
    except JsonTextError as error:
        where = position
        if position == WHOLE_FILE and error.line is not None:
            where = f"line {error.line} column {error.column}"
        return LoadedRecord(file, where, error=f"invalid JSON: {error.reason}")
    return LoadedRecord(file, position, record=value)
