"""Accuracy on real errors, shared by the torch, vLLM and SGLang tests:
trigger real errors, find the line that raised each one, and count how often /api/match's
first answer, over a store harvested from the same release, points at that line."""

import json
import linecache
import sqlite3
import subprocess
import sys
import traceback
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.config import PROJECT_ROOT, Settings
from app.harvest import drafts
from app.main import create_app
from app.records import service as records
from app.store.engine import unit_of_work
from app.upstreams import torch as torch_project
from app.upstreams.base import releases
from app.upstreams.release_cache import UNPACKED_DIR
from tests.helpers.releases import RELEASES

Site = tuple[str, int]
"""A raise site: the file as the upstream repository names it, and the line."""

RealError = tuple[str, str, int]
"""A real error: its formatted traceback, and the file and line that raised it."""

SUBPROCESS_TIMEOUT_S = 300
_RESULT_MARK = "errkb-real-errors: "


def raise_site(error: BaseException, root: Path, repo_prefix: str = "") -> Site:
    """Where `error` was raised: the traceback's last frame, as a path under `root` (the
    folder holding the package) with the repository's prefix (SGLang's `python/`).

    The frame must be a `raise` line of the release: an error that surfaced in pydantic, a
    stub or the test itself is not an error of the release, so its trigger must change.
    """
    tb = error.__traceback__
    assert tb is not None, f"{error!r} has no traceback"
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = Path(tb.tb_frame.f_code.co_filename)
    assert path.is_relative_to(root), f"{error!r} was raised in {path}, outside {root}"
    line = linecache.getline(str(path), tb.tb_lineno)
    assert line.lstrip().startswith("raise"), f"{path}:{tb.tb_lineno} is no raise: {line!r}"
    return repo_prefix + path.relative_to(root).as_posix(), tb.tb_lineno


def trigger_all(
    triggers: Mapping[str, Callable[[], object]], site: Callable[[BaseException], Site]
) -> dict[str, RealError]:
    """name -> the real error each trigger raised; a trigger that raises nothing fails."""
    found = {}
    for name, trigger in triggers.items():
        try:
            trigger()
        except Exception as error:  # every real error is wanted
            found[name] = ("".join(traceback.format_exception(error)), *site(error))
        else:
            raise AssertionError(f"{name} raised nothing")
    return found


def errors_in_subprocess(module: str) -> dict[str, RealError]:
    """`module.real_errors()`, run in a fresh interpreter.

    Loading a release's modules registers empty parent packages and stand-ins in
    sys.modules, and vLLM's logger reconfigures logging: none of it may reach other tests.
    """
    code = f"import json, {module} as m; print({_RESULT_MARK!r} + json.dumps(m.real_errors()))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT_S,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    results = [line for line in done.stdout.splitlines() if line.startswith(_RESULT_MARK)]
    assert results, done.stdout[-2000:]
    found = json.loads(results[-1].removeprefix(_RESULT_MARK))
    return {name: (text, path, line) for name, (text, path, line) in found.items()}


def stand_in_types(module: str, *names: str) -> None:
    """Empty classes for upstream names that the tested code uses only as types: in
    annotations evaluated at import, or as a mixin base. A `Stub` instance can be neither
    (`Stub | None` and `class X(Stub, Struct)` raise), and importing the real names would
    pull in the serving stack. An already registered module (an emptied parent package)
    gets the names; otherwise a stand-in module replaces the real one."""
    holder = sys.modules.get(module)
    if holder is None:
        holder = sys.modules[module] = types.ModuleType(module)
    for name in names:
        setattr(holder, name, type(name, (), {"__module__": module}))


HARVESTED = ("vllm==0.33.0", "sglang==0.5.23", "torch", "vllm==0.12.0", "vllm==0.14.1")
"""What the accuracy tests' one store holds: the current vLLM, SGLang and torch, and two
older vLLM releases. Each test scores its own errors over all of it, as a
service that serves them all would answer."""


OLDER = (
    *releases("vllm", "0.11.2 0.10.2 0.9.2 0.8.5.post1 0.7.3 0.6.6.post1 0.5.5 0.4.3 0.3.3 0.2.7"),
    *releases(
        "sglang",
        "0.5.12.post1 0.5.5.post3 0.5.3.post3 0.5.1.post3 0.4.9.post6 0.4.6.post5 0.4.3.post4 "
        "0.4.0.post2 0.3.6.post3 0.2.15 0.1.26 0.1.17",
    ),
    *torch_project.PROJECT.older_releases,
)
"""The older releases real pastes come from, added to HARVESTED for the real-paste measure:
the last patch of every vLLM minor before 0.12 (back to 0.2, 2023), of the SGLang releases
the cases name and of every SGLang minor before 0.4 (0.1 to 0.3, 2024), and of every torch 2
minor (2.0 to 2.12, 2023-2026: each one's Python from its macOS wheel, its compiled messages
from its Linux CUDA wheel's libraries). Each is one of the default serve's older releases."""


@dataclass
class Harvested:
    """A service over the store, and what each release's harvest found and stored."""

    client: TestClient
    results: dict[str, tuple[drafts.harvest.HarvestResult, drafts.DraftCounts]]
    database: Path


def harvested_store(
    folder: Path,
    specs: tuple[str, ...] = HARVESTED,
    start_from: Path | None = None,
    curated: Path | None = None,
) -> Harvested:
    """A service whose store holds the drafts harvested from these releases, in order
    (specs that `drafts.resolve_release` takes); `start_from`: a copy of that SQLite store
    is harvested into, so that a larger store does not harvest the shared releases again;
    `curated`: a folder of curated records imported before the harvest, as `errkb serve`
    imports data/records before it harvests."""
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "errkb.db"
    if start_from is not None:
        with sqlite3.connect(start_from) as source, sqlite3.connect(database) as copy:
            source.backup(copy)
    # The releases the store was harvested from, where errkb serve has them (its cache):
    # where the interpreter raised is read from their source (app.matching.statements).
    unpacked = folder / UNPACKED_DIR
    if not unpacked.exists():
        unpacked.symlink_to(RELEASES.cache_dir / UNPACKED_DIR, target_is_directory=True)
    settings = Settings(
        database_url=f"sqlite:///{database}",
        cache_dir=folder,
        older_releases=[],
        paste_budget_bytes=0,  # thousands of pastes from one client: the measure is matching
        match_deadline_s=60.0,  # what it answers, not how fast: a stall of a loaded machine
    )
    app = create_app(settings)
    results = {}
    if curated is not None:
        with unit_of_work(app.state.services.engine) as session:
            report = records.import_paths(session, [curated])
        assert not report.rejected, report.rejected
    with unit_of_work(app.state.services.engine) as session:
        for spec in specs:
            results[spec] = drafts.harvest_release(
                session, drafts.resolve_release(spec, releases=RELEASES)
            )
    return Harvested(TestClient(app), results, database)


@dataclass
class Score:
    """How often the first (and any of the first three) matches pointed at the raise site."""

    errors: int
    top1: int = 0
    top3: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def top1_rate(self) -> float:
        return self.top1 / self.errors

    @property
    def top3_rate(self) -> float:
        return self.top3 / self.errors

    def report(self, upstream: str) -> str:
        """The figures and every miss, for `pytest -s`."""
        head = (
            f"{upstream} accuracy over {self.errors} real errors: "
            f"top-1 {self.top1_rate:.1%}, top-3 {self.top3_rate:.1%}"
        )
        return "\n".join([head, *self.misses])


def _points_at(client: TestClient, match: dict[str, Any], site: Site) -> bool:
    """Whether a match's record is the raise site: its own file and line, or, for a record
    located in several releases, one of its per-release locations."""
    record = match["record"]
    if (record["filePath"], record["lineNumber"]) == site:
        return True
    response = client.get(f"/api/errors/{match['id']}")
    assert response.status_code == 200, response.text
    return any(
        (location["filePath"], location["lineNumber"]) == site
        for location in response.json()["locations"]
    )


def score(client: TestClient, errors: Mapping[str, RealError]) -> Score:
    """Match every real traceback and score where its first three matches point."""
    result = Score(len(errors))
    for name, (text, path, line) in errors.items():
        response = client.post("/api/match", json={"text": text}, params={"limit": 3})
        assert response.status_code == 200, response.text
        matches = response.json()["matches"]
        hits = [_points_at(client, match, (path, line)) for match in matches]
        result.top1 += hits[:1] == [True]
        result.top3 += any(hits)
        if hits[:1] != [True]:
            top = [(m["record"]["filePath"], m["record"]["lineNumber"]) for m in matches[:1]]
            last_line = text.rstrip().splitlines()[-1]
            result.misses.append(f"{name}: raised at {path}:{line}, top {top}; {last_line}")
    return result
