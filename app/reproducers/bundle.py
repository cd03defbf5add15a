"""One file that runs the CUDA reproducers on a GPU machine without network: the bundle.

Made here, with the package index at hand (`make_bundle`, `errkb verify --bundle DIR`): every
curated reproducer that runs on CUDA, and every generated CUDA-only one of the store, runs
once with `--bundle`, which loads its target, copies the upstream files it loaded into the
bundle's cache (merged per release: one reproducer's files never replace another's) and
reports the distributions its process imported (app/reproducers/environments.py). Their
wheels, for the GPU machine's Python and platform, are downloaded as pinned here and
installed into the bundle by unpacking them: errkb's and the harness's own into `site/`, a
release's requirement environment (vLLM's config needs transformers, pyzmq...) into the
cache's `envs/` folder where the reproducers look for it. What that machine brings itself
(torch and what torch requires, CUDA's own packages) is left out, as is a distribution with
no wheel for that Python, each said in the manifest.

The tree goes into one xz-compressed tar (`bundle.tar.xz`, beside `manifest.json`): wheels
are zip files, compressed one member at a time, and the same files in one xz stream take
much less room (docs/benchmarks.md, "The GPU tier": the bundle against the same files as
wheels), which keeps the bundle within what a GPU machine is handed.

Run there with `python3 -m app.reproducers.offline DIR` (app/reproducers/offline.py), which
unpacks the archive and hands over to `errkb verify --from-bundle` (`run_bundle`).
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlmodel import Session, col

from app.config import PROJECT_ROOT, Settings
from app.reproducers import runner
from app.reproducers.environments import download_wheels, folder_bytes, unpack_wheels
from app.reproducers.generation import verification
from app.reproducers.offline import ARCHIVE, MANIFEST, SITE
from app.reproducers.runs import checkout_commit
from app.store.tables import GeneratedReproducer, RecordLocation
from app.upstreams import release_cache

CACHE = "cache"  # the bundle's cache directory (ERRKB_CACHE_DIR there): releases, envs
GENERATED = "generated"  # generated scripts, each in a folder of its own beside its record
LIMIT_BYTES = 64 * 2**20  # what the GPU machine is handed beside the working tree
DEFAULT_PYTHON = "3.12"
DEFAULT_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
SCRIPT_TIMEOUT_S = 600.0
# What the process that runs a bundle imports besides the reproducers: errkb's CLI, the
# runners and the run file.
RUNNER_MODULES = ("app.cli.commands", "app.reproducers.bundle", "app.reproducers.forked")


@dataclass(slots=True)
class Manifest:
    """What a bundle holds and for what: read by the run on the GPU machine."""

    created: str
    commit: str | None
    python: str
    platforms: list[str]
    device_torch: str | None = None
    curated: list[str] = field(default_factory=list)
    generated: dict[str, list[str]] = field(default_factory=dict)  # release -> record ids
    wheels: list[str] = field(default_factory=list)  # installed into site/
    environments: dict[str, list[str]] = field(default_factory=dict)  # release -> its wheels
    left_out: list[dict[str, str]] = field(default_factory=list)
    bytes: int = 0

    def leave_out(self, what: str, why: str) -> None:
        self.left_out.append({"what": what, "why": why})

    def write(self, folder: Path) -> None:
        (folder / MANIFEST).write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")


def read_manifest(folder: Path) -> Manifest:
    """The manifest of a bundle; ValueError naming the file when there is none or it is not one."""
    path = folder / MANIFEST
    try:
        return Manifest(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError) as error:
        raise ValueError(f"{path}: not a bundle manifest ({error})") from error


@dataclass(slots=True)
class _Needs:
    """The distributions the bundled processes imported: errkb's and the harness's own (`site`),
    and each release's requirement environment."""

    site: dict[str, str] = field(default_factory=dict)
    environments: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, release: str | None, distributions: Iterable[dict[str, Any]]) -> None:
        for found in distributions:
            if found.get("environment") and release:
                self.environments.setdefault(release, {})[found["name"]] = found["version"]
            else:
                self.site[found["name"]] = found["version"]


def script_environment(settings: Settings, data_dir: Path | None = None) -> dict[str, str]:
    """What a reproducer run here to be bundled needs: errkb on its path, the cache, its
    record's folder."""
    path = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p)
    return os.environ | {
        "PYTHONPATH": path,
        "ERRKB_CACHE_DIR": str(settings.cache_dir.expanduser().resolve()),
        "ERRKB_DATA_DIR": str((data_dir or settings.data_dir).resolve()),
    }


def bundle_script(
    script: Path, tree: Path, environment: dict[str, str]
) -> tuple[dict[str, Any] | None, str]:
    """Run one reproducer with `--bundle`: its loaded upstream files copied into the bundle's
    cache; its report (files, release, distributions), or None and why. It only loads its
    target, in a scratch folder of its own, on the torch installed here (a torch script
    moved to the GPU machine's release pins that one)."""
    try:
        bundled = ("--torch", "installed", "--bundle", str(tree.resolve() / CACHE))
        with tempfile.TemporaryDirectory(prefix="errkb-bundle-run-") as scratch:
            done = subprocess.run(
                [sys.executable, str(script.resolve()), *bundled],
                capture_output=True,
                text=True,
                timeout=SCRIPT_TIMEOUT_S,
                env=environment,
                cwd=scratch,
                check=False,
            )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, str(error)
    for line in reversed(done.stdout.strip().splitlines()):
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(report, dict) and "bundle" in report:
            return report, ""
        if isinstance(report, dict) and report.get("reason"):
            return None, str(report["reason"])
        break
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
    return None, f"exited with {done.returncode}: {' '.join(tail)}"


def _runner_distributions(settings: Settings) -> list[dict[str, Any]]:
    """What the process that runs a bundle imports of its own (errkb's CLI and runners)."""
    code = (
        f"import importlib, json\nfor name in {list(RUNNER_MODULES)!r}:\n"
        "    importlib.import_module(name)\n"
        "from app.reproducers.environments import imported_distributions\n"
        "print(json.dumps(imported_distributions()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT_S,
        env=script_environment(settings),
        check=True,
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def make_bundle(
    settings: Settings,
    engine: Engine | None,
    dest: Path,
    python: str = DEFAULT_PYTHON,
    platforms: Iterable[str] = DEFAULT_PLATFORMS,
    device_torch: str | None = None,
    limit_bytes: int = LIMIT_BYTES,
    record_ids: Iterable[str] = (),
) -> Manifest:
    """Write into `dest` (emptied first, when it is a bundle or empty) the archive and
    manifest a GPU machine without network needs to run every curated CUDA reproducer and
    the store's generated CUDA-only ones (`engine`; none without it); `device_torch`, the
    torch release that machine has, moves generated torch scripts to where its harvest found
    their raise; `record_ids`, when given, are the only curated ones taken. Raises
    ValueError for a folder that holds anything but a bundle, and for a bundle over the
    limit."""
    _empty(dest)
    wanted = set(record_ids)
    manifest = Manifest(
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        commit=checkout_commit(PROJECT_ROOT),
        python=python,
        platforms=list(platforms),
        device_torch=device_torch,
    )
    with tempfile.TemporaryDirectory(prefix="errkb-bundle-") as scratch:
        tree, wheels = Path(scratch) / "tree", Path(scratch) / "wheels"
        needs = _Needs()
        needs.add(None, _runner_distributions(settings))
        for info in runner.all_reproducers(settings):
            if "cuda" not in info.devices or (wanted and info.record_id not in wanted):
                continue
            report, why = bundle_script(info.script, tree, script_environment(settings))
            if report is None:
                manifest.leave_out(info.record_id, f"its --bundle run failed: {why}")
                continue
            manifest.curated.append(info.record_id)
            needs.add(report.get("release"), report.get("distributions") or [])
        if engine is not None:
            _bundle_generated(settings, engine, tree, manifest, needs)
        _install_wheels(tree, wheels, manifest, needs)
        manifest.write(tree)
        with tarfile.open(dest / ARCHIVE, "w:xz") as archive:
            archive.add(tree, arcname=".")
        unpacked = folder_bytes(tree)
    manifest.bytes = (dest / ARCHIVE).stat().st_size
    manifest.write(dest)
    if manifest.bytes > limit_bytes:
        raise ValueError(
            f"the bundle in {dest} is {manifest.bytes / 2**20:.1f} MiB "
            f"({unpacked / 2**20:.0f} MiB unpacked), over the "
            f"{limit_bytes / 2**20:.0f} MiB a GPU machine is handed"
        )
    return manifest


def _empty(dest: Path) -> None:
    """Make `dest` an empty folder; only a bundle made before, or nothing, is removed."""
    if dest.exists():
        if not dest.is_dir():
            raise ValueError(f"{dest} is not a folder")
        ours = {MANIFEST, ARCHIVE, "unpacked"}
        others = sorted(path.name for path in dest.iterdir() if path.name not in ours)
        if others:
            raise ValueError(f"{dest} holds more than a bundle ({', '.join(others[:5])})")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)


def _install_wheels(tree: Path, wheels: Path, manifest: Manifest, needs: _Needs) -> None:
    """The wheels of what the bundled processes imported, for the GPU machine's Python,
    unpacked into the tree: errkb's and the harness's own into site/, each release's
    environment where the reproducers look for it."""

    def fetch(pins: dict[str, str], folder: Path) -> list[Path]:
        failed = download_wheels(
            [f"{name}=={version}" for name, version in pins.items()],
            folder,
            manifest.python,
            manifest.platforms,
        )
        for pin, said in failed.items():
            manifest.leave_out(pin, f"no wheel for Python {manifest.python}: {said}")
        return sorted(folder.glob("*.whl"))

    site = fetch(needs.site, wheels / SITE)
    unpack_wheels(site, tree / SITE)
    manifest.wheels = [wheel.name for wheel in site]
    releases = release_cache.Upstream(tree / CACHE)
    for release, pins in sorted(needs.environments.items()):
        found = fetch(pins, wheels / release)
        name, _, version = release.partition("==")
        unpack_wheels(found, releases.environment_dir(name, version))
        manifest.environments[release] = [wheel.name for wheel in found]


def cuda_only_rows(session: Session) -> list[tuple[GeneratedReproducer, str, str]]:
    """The store's generated reproducers that run on CUDA only, with their repository and
    record document."""
    return [
        item
        for item in verification.stored_rows(session, ())
        if "cpu" not in verification.script_devices(item[0].script)
    ]


def _retargeted(
    session: Session, row: GeneratedReproducer, version: str
) -> GeneratedReproducer | str:
    """A generated torch script moved to the release a GPU machine has: its lines where that
    release's harvest found the raise; why not, when it found none."""
    pinned = verification.pinned_line(row.script)
    found = session.execute(
        select(RecordLocation).where(
            col(RecordLocation.record_id) == row.record_id,
            col(RecordLocation.release) == f"{row.package}=={version}",
            col(RecordLocation.gone).is_(False),
        )
    ).scalar_one_or_none()
    if found is None or found.line_number is None or pinned is None:
        return f"no raise site of it in the harvest of {row.package} {version}"
    script = verification.retargeted(row.script, version, found.line_number - pinned)
    return GeneratedReproducer(**{**row.model_dump(), "version": version, "script": script})


def _bundle_generated(
    settings: Settings, engine: Engine, tree: Path, manifest: Manifest, needs: _Needs
) -> None:
    """The generated CUDA-only scripts, each with its record; one script of each target
    module runs with --bundle (the others load the same files)."""
    bundled: dict[tuple[str, str, str], str | None] = {}
    with Session(engine) as session:
        for stored, _repo, document in cuda_only_rows(session):
            row = stored
            if row.package == "torch" and manifest.device_torch not in (None, row.version):
                moved = _retargeted(session, row, str(manifest.device_torch))
                if isinstance(moved, str):
                    manifest.leave_out(row.record_id, moved)
                    continue
                row = moved
            release = f"{row.package}=={row.version}"
            folder = tree / GENERATED / release / row.record_id
            folder.mkdir(parents=True, exist_ok=True)
            script = folder / f"{row.record_id}.py"
            script.write_text(row.script, encoding="utf-8")
            (folder / f"{row.record_id}.json").write_text(document, encoding="utf-8")
            key = (row.package, row.version, row.module)
            if key not in bundled:
                report, why = bundle_script(script, tree, script_environment(settings, folder))
                bundled[key] = None if report is not None else why
                if report is not None:
                    needs.add(report.get("release"), report.get("distributions") or [])
            if bundled[key] is not None:
                shutil.rmtree(folder)
                manifest.leave_out(
                    row.record_id, f"its module's --bundle run failed: {bundled[key]}"
                )
                continue
            manifest.generated.setdefault(release, []).append(row.record_id)


def run_bundle(
    settings: Settings, folder: Path, device: str, torch: str
) -> list[runner.RunOutcome]:
    """Run every reproducer of an unpacked bundle (`folder`, its tree, with its site/ on
    this process's path) on this machine: the curated ones each in a process of its own,
    the generated ones of a release in children of one zygote, all with this device and
    torch; nothing is stored (the run file carries the results back)."""
    manifest = read_manifest(folder)
    settings = settings.model_copy(update={"cache_dir": (folder / CACHE).resolve()})
    outcomes = []
    for record_id in manifest.curated:
        info = runner.reproducer_info(settings, record_id)
        if info is None:
            raise ValueError(f"{folder / MANIFEST} names {record_id}, which has no reproducer here")
        outcomes.append(runner.run_reproducer(settings, info, device, torch=torch))
    args = ("--device", device, "--torch", torch)
    with tempfile.TemporaryDirectory(prefix="errkb-bundle-") as scratch:
        for release, record_ids in manifest.generated.items():
            package, _, version = release.partition("==")
            items = [
                _bundled_row(folder / GENERATED / release / record_id, package, version)
                for record_id in record_ids
            ]
            queue = [row.record_id for row, _, _ in items]

            def keep(
                _repo: str, outcome: runner.RunOutcome | str, queue: list[str] = queue
            ) -> None:
                """run_release hands over one outcome per script, in order; a zygote that
                could not import the release answers for each script with why."""
                record_id = queue.pop(0)
                if isinstance(outcome, str):
                    outcome = _not_run(
                        record_id, device, f"the module cannot be imported: {outcome}"
                    )
                outcomes.append(outcome)

            verification.run_release(settings, Path(scratch), (package, version), items, keep, args)
    return outcomes


def _bundled_row(folder: Path, package: str, version: str) -> tuple[GeneratedReproducer, str, str]:
    """A generated script of a bundle as the zygote runner takes it: the script, its
    release, and its record's document beside it."""
    record_id = folder.name
    script = (folder / f"{record_id}.py").read_text(encoding="utf-8")
    document = (folder / f"{record_id}.json").read_text(encoding="utf-8")
    row = GeneratedReproducer(
        record_id=record_id,
        package=package,
        version=version,
        module=verification.script_module(script),
        trigger_call="",
        fix_call="",
        direct_state=False,
        script=script,
        generated_at=datetime.now(UTC),
    )
    return row, "", document


def _not_run(record_id: str, device: str, reason: str) -> runner.RunOutcome:
    return runner.RunOutcome(
        record_id=record_id,
        device=device,
        status="error",
        reason=reason,
        duration_s=0.0,
        output_tail="",
        result=None,
        started_at=datetime.now(UTC),
    )
