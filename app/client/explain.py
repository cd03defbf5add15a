"""The short explanation shown where an error happens: the record's title, its link, its top
advice, and whether a reproducer proved it.

Built from the API's JSON (POST /api/match, GET /api/errors/{id}), whoever answers it: a
server through app.client.http, or the local store through app.client.local, which answers
the same shapes. `errkb run`, `errkb explain`, the Python hook and the pytest plugin all
print what `explanations` returns, so an error reads the same wherever it surfaces.
"""

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from app.client.watch import chunks_of

if TYPE_CHECKING:
    from app.config import Settings

MATCH_LIMIT = 10
"""Matches asked for per text: enough for the best one of each exception in a chunk."""


class Source(Protocol):
    """Who answers: a server (app.client.http.ApiClient) or the local store
    (app.client.local.LocalStore)."""

    def match(self, text: str, limit: int) -> dict[str, Any]:
        """POST /api/match's answer for `text`."""
        ...

    def search(
        self, query: str, filters: Mapping[str, str], limit: int, cursor: str | None
    ) -> dict[str, Any]:
        """GET /api/search's answer."""
        ...

    def record(self, record_id: str) -> dict[str, Any]:
        """GET /api/errors/{id}'s answer."""
        ...

    def link(self, record_id: str) -> str:
        """Where a person reads the whole record."""
        ...


@dataclass(frozen=True, slots=True)
class Explanation:
    """What to tell a person about one error that a record explains."""

    record_id: str
    title: str  # "RuntimeError: Attempted to free more buffers than allocated"
    repo: str
    link: str
    advice: str  # the top solution, or why there is none yet
    # "Reproduced on CPU (torch 2.13.0+cpu, Python 3.11.7) on 2026-12-04, against vllm 0.33.0"
    reproduced: str | None
    seen: str  # the exception as it was raised: "RuntimeError: ... at control offset 4096"


def explanations(source: Source, text: str, explained: set[str]) -> list[Explanation]:
    """The best record for each exception (or error line) of `text` that no earlier call
    explained; `explained` collects the record ids, so a caller explains each error once."""
    result = source.match(text, MATCH_LIMIT)
    seen = {
        exception["index"]: f"{exception['qualifiedClass']}: {exception['message']}".strip()
        for exception in result.get("exceptions", [])
    }
    best: dict[Any, dict[str, Any]] = {}
    for match in result.get("matches", []):  # best first
        best.setdefault(match.get("exceptionIndex"), match)
    found = []
    for index, match in best.items():
        if match["id"] in explained:
            continue
        explained.add(match["id"])
        document = source.record(match["id"])
        found.append(_explanation(document, source.link(document["record"]["id"]), seen, index))
    return found


def open_source(settings: "Settings", timeout_s: float, create_store: bool = True) -> Source:
    """The configured server (ERRKB_SERVER), else the local store, loaded only then;
    `create_store=False` answers with a ClientError where no store exists yet."""
    if settings.server:
        from app.client.http import ApiClient

        return ApiClient(settings.server, timeout_s)
    from app.client.local import LocalStore

    return LocalStore(settings, create=create_store)


def explain_quietly(text: str) -> list[Explanation] | None:
    """The explanations of `text` within ERRKB_HOOK_TIMEOUT_S, for code that runs inside
    someone else's program or test run; None when no answer came (no server, no store, too
    slow, any error): such code adds nothing rather than a second traceback or a wait."""
    try:
        from app.config import Settings

        settings = Settings()
    except Exception:  # a malformed ERRKB_* variable is not the program's problem
        return None
    found: list[list[Explanation]] = []

    def ask() -> None:
        try:
            source = open_source(settings, settings.hook_timeout_s, create_store=False)
            found.append(explanations(source, text, set()))
        except Exception:  # any failure is the same as no answer: nothing to add
            return

    worker = threading.Thread(target=ask, name="errkb-explain", daemon=True)
    worker.start()
    worker.join(settings.hook_timeout_s)
    return found[0] if found else None


def explain_log(source: Source, text: str) -> list[Explanation]:
    """Each known error of a whole log, once: its error chunks as `errkb run` would have
    sent them while the log was written (app.client.watch), each asked about in turn."""
    explained: set[str] = set()
    return [
        explanation
        for chunk in chunks_of(text)
        for explanation in explanations(source, chunk, explained)
    ]


def _explanation(
    document: dict[str, Any], link: str, seen: dict[int, str], index: int | None
) -> Explanation:
    record = document["record"]
    title = f"{record['errorClass']}: {record['errorMessage']}"
    return Explanation(
        record_id=record["id"],
        title=title,
        repo=record["repo"],
        link=link,
        advice=_advice(document),
        reproduced=_reproduced(document),
        seen=seen.get(index, title) if index is not None else title,
    )


def _advice(document: dict[str, Any]) -> str:
    """The page's lede: the first solution of an explained record; a draft has none yet."""
    record = document["record"]
    solutions = record.get("solutions") or []
    if document.get("review", {}).get("state") != "draft" and solutions:
        return str(solutions[0])
    where = record.get("filePath") or record["repo"]
    if record.get("lineNumber"):
        where += f":{record['lineNumber']}"
    return f"not explained yet: a draft harvested from where it is raised, {where}"


def _reproduced(document: dict[str, Any]) -> str | None:
    """The latest passing run of the record's reproducer, or that it has one not yet run."""
    for run in document.get("runs") or []:  # newest first
        if run.get("status") == "passed":
            against = " ".join(part for part in (run.get("package"), run.get("version")) if part)
            said = run.get("summary") or (
                f"Reproduced on {run['device']} on {str(run['startedAt'])[:10]}"
            )
            return said + (f", against {against}" if against else "")
    if document.get("reproducer"):
        return f"reproducer: {document['reproducer']} (no passing run yet)"
    return None


def as_text(explanation: Explanation) -> str:
    """A few lines for a terminal's standard error, after the error itself."""
    lines = [
        f"errkb: {explanation.title} ({explanation.repo})",
        f"  see: {explanation.link}",
        f"  fix: {explanation.advice}",
    ]
    if explanation.reproduced:  # "  reproduced on ...", a line like see: and fix:
        lines.append(f"  {explanation.reproduced[:1].lower()}{explanation.reproduced[1:]}")
    return "\n".join(lines) + "\n"


def as_markdown(found: Iterable[Explanation], name: str) -> str:
    """A job summary section: one heading per error, the advice and the proof under it."""
    found = list(found)
    if not found:
        return f"### errkb: no known error in {_code(name)}\n"
    noun = "error" if len(found) == 1 else "errors"
    parts = [f"### errkb: {len(found)} known {noun} in {_code(name)}\n"]
    for explanation in found:
        title, link = _escape(explanation.title), explanation.link
        heading = f"[{title}]({link})" if link.startswith(("http://", "https://")) else title
        where = "" if heading != title else f"; {_code(link)}"
        parts.append(
            f"\n#### {heading}\n\n"
            f"{_code(explanation.seen)} ({_escape(explanation.repo)}{where})\n\n"
            f"**Fix:** {_escape(explanation.advice)}\n"
        )
        if explanation.reproduced:
            proof = explanation.reproduced
            parts.append(f"\n{_escape(proof[:1].upper() + proof[1:])}.\n")
    return "".join(parts)


def _code(text: str) -> str:
    """Inline code that no backtick in `text` can end early."""
    text = " ".join(text.split())[:300]
    longest = 0
    run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if "`" in text else f"`{text}`"


def _escape(text: str) -> str:
    """Text that Markdown shows as written: no markup, links or HTML of its own."""
    text = " ".join(text.split())
    entities = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    return "".join(
        entities.get(char) or ("\\" + char if char in "\\`*_[]#|~!" else char) for char in text
    )
