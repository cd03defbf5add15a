"""What `errkb match`, `errkb search` and `errkb show` print, made from the API's JSON.

Printing from the JSON rather than from the services' objects means the local store and a
server (`--server`) answer through one function each, so both print the same, line for line.
`show` follows the record page's order: the question, the advice, the message, what it means,
the source, the releases, the solutions and patterns, related records and the reproducer.
"""

from typing import Any


def match_lines(result: dict[str, Any], headlines: dict[str, str] | None = None) -> list[str]:
    """The exceptions found, then each match with its place, state, captures and reasons,
    and what the record's code says in one line (`headlines`, by record id) where known."""
    lines = []
    for exception in result["exceptions"]:
        cause = exception.get("causeIndex")
        caused = "" if cause is None else f" (caused by #{cause})"
        if library := exception.get("raisedBy"):
            caused += f" (raised by {library})"
        lines.append(
            f"#{exception['index']} {exception['qualifiedClass']}: {exception['message']}{caused}"
        )
    if not result["matches"]:
        lines.append("no record matches")
    for match in result["matches"]:
        record = match["record"]
        where = record["filePath"] or record["repo"]
        if record["filePath"] and record["lineNumber"]:
            where += f":{record['lineNumber']}"  # a native (C++) record names its file only
        captures = ", ".join(f"{key}={value}" for key, value in match["captures"].items())
        lines.append(
            f"{match['score']:6.1f}  {record['id']}  {record['errorClass']}: "
            f"{record['errorMessage']}"
        )
        lines.append(
            f"        {where}  [{record['reviewState']}]" + (f"  {captures}" if captures else "")
        )
        lines.append(f"        {'; '.join(match['reasons'])}")
        if headline := (headlines or {}).get(record["id"]):
            lines.append(f"        what the code says: {headline}")
    return lines


def search_lines(page: dict[str, Any]) -> list[str]:
    """The total, then each hit: id, repository, class and title, and its snippet."""
    lines = [f"{page['total']}{'' if page['totalExact'] else '+'} records"]
    for hit in page["items"]:
        record = hit["record"]
        lines.append(
            f"{record['id']}  {record['repo']}  {record['errorClass']}: {hit['title']['text']}"
        )
        if hit.get("snippet") is not None:
            lines.append(f"    {hit['snippet']['text']}")
    return lines


def record_lines(document: dict[str, Any], link: str) -> list[str]:
    """A record as its page shows it, as plain text; `link` is where the page itself is."""
    record = document["record"]
    draft = document["review"]["state"] == "draft"
    lines = [f"What causes “{record['errorMessage']}” in {record['repo']}?"]
    solutions = record.get("solutions") or []
    if draft:
        lines.append(
            "draft: not yet explained. This record was harvested from the source code; nobody "
            "has written up what it means or how to fix it yet."
        )
    elif solutions:
        lines.append(solutions[0])
    meta = [record["repo"], record["severity"], record["errorClass"], document["review"]["state"]]
    lines.append(
        "  ".join(meta) + (f"  tags: {', '.join(record['tags'])}" if record["tags"] else "")
    )
    lines.append(f"page: {link}")
    _section(lines, "Error message", [record["errorMessage"]])
    if not draft and record.get("documentation"):
        _section(lines, "What it means", [record["documentation"]])
    if record.get("sourceCode"):
        where = record.get("filePath") or ""
        if record.get("lineNumber"):
            where += f":{record['lineNumber']}"
        body = [f"Thrown at {where}"]
        start = record.get("sourceCodeStart") or 1
        for number, code in enumerate(record["sourceCode"].split("\n"), start):
            mark = ">" if number == record.get("lineNumber") else " "
            body.append(f"{mark}{number:6d}  {code}")
        if record.get("githubUrl"):
            body.append(f"View on GitHub: {record['githubUrl']}")
        _section(lines, "Source", body)
    if document.get("locations"):
        body = [f"Raised {item['text']}." for item in document.get("history", [])]
        for location in document["locations"]:
            release = location["release"].replace("==", " ")
            if location["status"] == "gone":
                body.append(f"{release}: no longer raised in {location['filePath']}")
                continue
            place = f"line {location['lineNumber']}"
            if location["filePath"] != record.get("filePath"):
                place = f"{location['filePath']} {place}"
            if location.get("function"):
                place += f", in {location['function']}"
            body.append(f"{release}: {place} ({location['status']})")
        _section(lines, "In each release", body)
    if not draft:
        _record_prose(lines, record)
    related = [
        f"{item['record']['id']}  {item['record']['errorMessage']} ({'; '.join(item['reasons'])})"
        for item in document.get("related", [])
    ]
    _section(
        lines,
        "Related errors",
        related or ["No record shares this one's background, file or tags."],
    )
    _section(lines, "Reproducer", _reproducer_lines(document))
    return lines


def _record_prose(lines: list[str], record: dict[str, Any]) -> None:
    """The curated sections, present only when written."""
    solutions = record.get("solutions") or []
    if solutions:
        _section(lines, "Solutions", [f"{n}. {text}" for n, text in enumerate(solutions, 1)])
    if record.get("exampleFix"):
        _section(lines, "Example fix", record["exampleFix"].split("\n"))
    defensive = []
    if record.get("handlingStrategy"):
        defensive.append(f"Strategy: {record['handlingStrategy']}")
    for key, heading in (
        ("validationCode", "Validate before calling"),
        ("typeGuard", "Type guard"),
        ("tryCatchPattern", "Try / except"),
    ):
        if record.get(key):
            defensive += [f"{heading}:", *(f"  {line}" for line in record[key].split("\n"))]
    if defensive:
        _section(lines, "Defensive patterns", defensive)
    if record.get("preventionTips"):
        _section(lines, "Prevention", [f"- {tip}" for tip in record["preventionTips"]])
    when = []
    if record.get("triggerScenarios"):
        when.append(f"Trigger: {record['triggerScenarios']}")
    if record.get("commonSituations"):
        when.append(f"Common situations: {record['commonSituations']}")
    if when:
        _section(lines, "When it happens", when)


def _reproducer_lines(document: dict[str, Any]) -> list[str]:
    runs = document.get("runs") or []
    body = []
    if runs:
        latest = runs[0]
        against = " ".join(part for part in (latest.get("package"), latest.get("version")) if part)
        body.append(
            f"Latest run: {latest.get('summary') or latest['status']}"
            + (f", against {against}" if against else "")
            + f" ({latest['startedAt'][:16].replace('T', ' ')})."
        )
        if latest.get("reason"):
            body.append(latest["reason"])
    else:
        body.append(
            "No reproducer run yet."
            + (
                f" A reproducer exists: {document['reproducer']}."
                if document.get("reproducer")
                else ""
            )
        )
    drift = document.get("drift")
    if drift:
        line = f" (line {drift['foundLine']})" if drift.get("foundLine") else ""
        body.append(
            f"Raise site in {drift['package']} {drift['version']}: {drift['status']}{line}. "
            f"{drift.get('detail') or ''}".rstrip()
        )
    return body


def _section(lines: list[str], heading: str, body: list[str]) -> None:
    lines += ["", heading, "-" * len(heading), *body]
