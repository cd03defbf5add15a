"""Raise sites -> draft records in the seed schema.

Each draft has the message template and pattern, the source excerpt around the raise, a
stable id, a slug and tags from the file's path, and where the release pins it (githubUrl,
analyzedSha). The prose fields stay null; people fill them in later.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from app.harvest.compiled import LiteralSite
from app.harvest.message_pieces import Field
from app.harvest.messages import message_of
from app.harvest.sites import (
    LOCATED_REASONS,
    LOG_KINDS,
    UNKNOWN_CLASS,
    Draft,
    Message,
    RaiseSite,
    SkipReason,
)
from app.records.advice_fields import UNWRITTEN_ADVICE
from app.records.model import ID_LENGTH, SCHEMA_VERSION
from app.records.slug import slug

CONTEXT_LINES = 18  # seeds: the excerpt around a raise at line 216 is lines 198-234
MAX_TAGS = 4
SUBMODULES = "third_party/"  # where torch keeps the repositories it builds in, as submodules
# Directory names that say nothing about the error: package roots and catch-alls.
GENERIC_TAG_DIRS = frozenset(
    "python sglang srt vllm torch utils util internal common impl lib src".split()
)
VERSION_DIR = re.compile(r"v\d+")
# The record's errorType by the site's kind; any other kind raises an exception.
ERROR_TYPES = {"log": "log", "warning": "warning"}


@dataclass(frozen=True)
class DraftStamp:
    """What every draft of one harvest is stamped with: where it pins its links, and when."""

    repo: str
    ref: str  # tag or commit: pins githubUrl, recorded as analyzedSha
    analyzed_at: str


def file_drafts(
    sites: list[RaiseSite], source: str, file_path: str, stamp: DraftStamp
) -> list[Draft]:
    """Drafts of one file; the n-th raise of a template in a function gets the n-th id.

    A site whose message is fully dynamic gets a draft whose template is one placeholder,
    named after the expression it raises (`{msg}`): it is matched by where it raises.
    """
    lines = source.split("\n")  # not splitlines(): ast counts only \n as a line break
    if lines[-1] == "":
        lines.pop()
    occurrences: Counter[tuple[str, str | None, str]] = Counter()
    drafts = []
    for site in sites:
        message = site.message
        located = message is None and site.skip in LOCATED_REASONS
        if located:
            hint = ast.unparse(site.hint_node) if site.hint_node is not None else "message"
            message = message_of((Field(hint),))
        if message is None:
            continue
        for piece in (message, *message.others):
            key = (_id_kind(site), site.qualname, piece.identity or piece.template)
            occurrences[key] += 1
            record = _record(site, piece, lines, file_path, stamp, occurrences[key])
            if site.skip == SkipReason.DYNAMIC_CLASS:
                record["errorClass"] = UNKNOWN_CLASS
            draft = Draft(record, site.function, site.class_name, site.qualname, located, site)
            drafts.append(draft)
    return drafts


def library_drafts(sites: list[LiteralSite], library: str, stamp: DraftStamp) -> list[Draft]:
    """Drafts of one compiled library's messages, filed under the library (the one place a
    release surely has them, so that a site keeps its id); the source file the library
    shows, and its line, are the link and the context."""
    occurrences: Counter[str] = Counter()
    drafts = []
    for site in sites:
        occurrences[site.message.template] += 1
        raising = RaiseSite(0, None, None, None, site.error_class, site.message, None, "check")
        record = _record(
            raising, site.message, [], library, stamp, occurrences[site.message.template]
        )
        where = site.source_file
        record |= _unlined(stamp, _library_link(where, site.line))
        context = {"library": library, "sourceFile": where, "sourceLine": site.line}
        drafts.append(Draft(record, None, None, None, context=context))
    return drafts


@dataclass(frozen=True)
class CatalogueEntry:
    """One error code of a catalogue (the CUDA runtime's, NCCL's) as the project reports it:
    its message, class and name, what the catalogue says of it and where it says so."""

    message: Message
    error_class: str
    code: str
    statement: str
    catalogue: str  # the release that defines it: `nvidia-cuda-runtime==13.0.96`
    defined_in: str  # the file of that release: `driver_types.h`
    defined_at: int | None  # its line there, where known


def catalogue_draft(entry: CatalogueEntry, file_path: str, stamp: DraftStamp) -> Draft:
    """The draft of one entry of an error catalogue, filed at the file that reports every
    entry alike: no line of its own, the code as errorCode, the catalogue's statement as
    the trigger of its explanation."""
    raising = RaiseSite(0, None, None, None, entry.error_class, entry.message, None, "check")
    record = _record(raising, entry.message, [], file_path, stamp, 1)
    record |= _unlined(stamp, file_path) | {"errorCode": entry.code}
    defined = {
        "ref": entry.catalogue,
        "filePath": entry.defined_in,
        "lineNumber": entry.defined_at,
        "githubUrl": None,
    }
    reported = {
        "ref": stamp.ref,
        "filePath": file_path,
        "lineNumber": None,
        "githubUrl": f"https://github.com/{stamp.repo}/blob/{stamp.ref}/{file_path}",
    }
    context = {
        "catalogue": entry.catalogue,
        "errorCode": entry.code,
        "explanation": {
            "settings": [],
            "advice": [],
            "trigger": {"text": entry.statement, "source": defined},
            "source": reported,
        },
    }
    return Draft(record, None, None, None, context=context)


def _library_link(source_file: str | None, line: int | None) -> str | None:
    """The link of a compiled message's source file (and line): the file at the release's
    tag, or for a submodule's file (`third_party/gloo/gloo/...`), which the repository's
    tree holds only as a commit of another repository, the folder listing each submodule at
    the commit the tag pins."""
    if source_file is None:
        return None
    if source_file.startswith(SUBMODULES):
        return SUBMODULES.rstrip("/")
    return f"{source_file}#L{line}" if line else source_file


def _unlined(stamp: DraftStamp, link: str | None) -> dict[str, Any]:
    """The fields of a site with no line of source in the release: no excerpt, and a link
    to the file (and line) where one is known."""
    return {
        "lineNumber": None,
        "sourceCode": None,
        "sourceCodeStart": None,
        "sourceCodeEnd": None,
        "githubUrl": f"https://github.com/{stamp.repo}/blob/{stamp.ref}/{link}" if link else None,
    }


def _record(
    site: RaiseSite,
    message: Message,
    lines: list[str],
    file_path: str,
    stamp: DraftStamp,
    occurrence: int,
) -> dict[str, Any]:
    """The record in the seeds' key order; prose fields null until someone writes them."""
    repo, ref = stamp.repo, stamp.ref
    start = max(1, site.line - CONTEXT_LINES)
    end = min(len(lines), site.line + CONTEXT_LINES)
    return {
        "id": _record_id(
            repo,
            file_path,
            site.qualname,
            message.identity or message.template,
            occurrence,
            _id_kind(site),
        ),
        "repo": repo,
        "slug": slug(message.template) or slug(site.error_class or ""),
        "errorCode": None,
        "errorMessage": message.template,
        "messagePattern": message.pattern,
        "errorType": ERROR_TYPES.get(site.kind, "exception"),
        "errorClass": site.error_class,
        "httpStatus": site.http_status,
        "severity": (site.level or "error").lower(),
        "filePath": file_path,
        "lineNumber": site.line,
        "sourceCode": "\n".join(lines[start - 1 : end]),
        "sourceCodeStart": start,
        "sourceCodeEnd": end,
        "githubUrl": f"https://github.com/{repo}/blob/{ref}/{file_path}#L{start}-L{end}",
        "documentation": None,
        "triggerScenarios": None,
        **UNWRITTEN_ADVICE,
        "tags": _tags(file_path),
        "backgroundTag": None,
        "analyzedSha": ref,
        "analyzedAt": stamp.analyzed_at,
        "schemaVersion": SCHEMA_VERSION,
    }


def _record_id(
    repo: str,
    file_path: str,
    qualname: str | None,
    template: str,
    occurrence: int,
    kind: str = "",
) -> str:
    """Independent of the line number, so a raise that only moves keeps its record. A log
    site's kind is part of its key, so that `logger.error(msg)` before `raise X(msg)` has a
    record of its own and the raise keeps the id it had before log sites were harvested."""
    fields = [repo, file_path, qualname or "<module>", template, str(occurrence)]
    key = "\0".join([*fields, kind] if kind else fields)
    return hashlib.sha256(key.encode()).hexdigest()[:ID_LENGTH]


def _id_kind(site: RaiseSite) -> str:
    """What sets a site's id apart beside its message: its kind for a log or warning site,
    nothing for a raise (its ids predate log sites)."""
    return site.kind if site.kind in LOG_KINDS else ""


def _tags(file_path: str) -> list[str]:
    """Meaningful directory names, outermost first, kebab-cased like the seeds' tags.

    `_dynamo` -> dynamo, `kv_transfer` -> kv-transfer; package roots and catch-alls
    (GENERIC_TAG_DIRS), version directories (`v1`) and one-letter names are dropped.
    """
    tags: list[str] = []
    for part in PurePosixPath(file_path).parent.parts:
        tag = slug(part)
        if (
            len(tag) > 1
            and tag not in GENERIC_TAG_DIRS
            and not VERSION_DIR.fullmatch(tag)
            and tag not in tags
        ):
            tags.append(tag)
    return tags[:MAX_TAGS]
