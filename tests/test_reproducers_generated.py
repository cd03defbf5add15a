"""Generated reproducers verified on the real release (each script in its own subprocess),
their runs stored, and the endpoint and record page showing them as generated, verified
only when the run passed."""

import getpass
import json
import random
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import Session, select

from app import upstreams
from app.config import PROJECT_ROOT, Settings
from app.reproducers import runner, runs
from app.reproducers.generation import bulk, reproducer, sites, verification
from app.store.engine import unit_of_work
from app.store.tables import GeneratedReproducer, Record
from tests.helpers import accuracy
from tests.helpers import generated as helper
from tests.helpers.real_pastes import TOP, load_cases
from tests.helpers.records import DATA_DIR
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # torch installed, vLLM downloaded with its environment


def test_generated_scripts_run_on_the_real_release_and_are_served_as_generated(
    settings, tmp_path, make_client
):
    engine = helper.harvested_store(settings, tmp_path, helper.TORCH_SGD, helper.VLLM_SAMPLING)
    made, figures = bulk.generate_scripts(engine, settings)
    optimizer = [m for m in made if m.package == "torch"]
    temperature = next(m for m in made if m.trigger_call.startswith("SamplingParams(temp"))
    sample = [*optimizer, temperature]
    outcomes, figures = verification.verify_scripts(
        engine, settings, [m.record_id for m in sample], workers=2, figures=figures
    )
    by_id = {outcome.record_id: outcome for outcome in outcomes}
    assert set(by_id) == {m.record_id for m in sample}
    for script in optimizer:  # torch's own checks: trigger and fix both hold
        outcome = by_id[script.record_id]
        assert outcome.status == "passed", outcome.reason
        assert outcome.result["fix"]["state"]["raiseRan"] is False
    assert figures["pytorch/pytorch"].verified == len(optimizer)
    # vLLM's check really raised at the site, whatever the record's pattern says of it
    sampled = by_id[temperature.record_id].result["trigger"]
    assert sampled["errorClass"] == "VLLMValidationError"
    assert sampled["message"].startswith("temperature must be non-negative, got -")
    with Session(engine) as session:
        counts = verification.verified_counts(session)
    passed = [o for o in outcomes if o.status == "passed"]
    assert counts == {"generated": len(made), "verified": len(passed)}

    client = make_client()
    lr = optimizer[0]
    answer = client.get(f"/api/errors/{lr.record_id}/reproducer").json()
    assert answer["generated"] is True
    assert answer["calls"]["triggerCall"] == lr.trigger_call
    assert answer["script"] == lr.script
    assert answer["runs"][0]["status"] == "passed"
    page = client.get(f"/errors/{lr.record_id}").text
    assert "Reproduced on torch 2.13.0:" in page
    twin = client.get(f"/api/errors/{lr.record_id}").json()
    assert twin["generated"]["fixCall"] == lr.fix_call
    page = client.get(f"/errors/{temperature.record_id}").text
    verified = by_id[temperature.record_id].status == "passed"
    assert ("Reproduced on vllm 0.33.0:" in page) is verified
    assert ("not verified" in page) is not verified
    charts = client.get("/api/stats/charts").json()
    assert charts["reproducerCounts"]["verified"] == len(passed)


def test_a_record_without_any_reproducer_is_still_not_found(settings, tmp_path, make_client):
    engine = helper.harvested_store(settings, tmp_path, helper.TORCH_SGD)
    with Session(engine) as session:
        drafts = bulk.draft_sites(session)
    client = make_client()
    answer = client.get(f"/api/errors/{drafts[0].site.record_id}/reproducer")
    assert answer.status_code == 404


def test_a_limited_selection_spreads_over_projects_and_files_before_it_repeats_one(
    settings, tmp_path
):
    """`--limit N` samples what errkb harvests: the projects in turn, and each file once
    before any file twice, not the first N sites of one file."""
    torch_lr = ("torch", "2.13.0", "torch/optim/lr_scheduler.py", "pytorch/pytorch")
    engine = helper.harvested_store(
        settings, tmp_path, helper.TORCH_SGD, torch_lr, helper.VLLM_SAMPLING
    )
    with Session(engine) as session:
        everything = bulk.draft_sites(session)
        chosen = bulk.draft_sites(session, limit=6)
    assert len(everything) > 20
    assert [draft.repo for draft in chosen] == ["pytorch/pytorch", "vllm-project/vllm"] * 3
    torch_files = [draft.file_path for draft in chosen if draft.repo == "pytorch/pytorch"]
    assert sorted(torch_files[:2]) == sorted({torch_lr[2], helper.TORCH_SGD[2]})
    in_file = [d for d in chosen if d.file_path == helper.VLLM_SAMPLING[2]]
    assert [d.site.line for d in in_file] == sorted(d.site.line for d in in_file)
    assert {d.site.record_id for d in chosen} <= {d.site.record_id for d in everything}


def test_the_selection_takes_python_raise_sites_only(settings, tmp_path):
    """A native check (C++) has no Python function to call and a log or warning site raises
    nothing: neither is a site to generate for, so neither takes a place of `--limit N`."""
    torch_lr = ("torch", "2.13.0", "torch/optim/lr_scheduler.py", "pytorch/pytorch")
    header = ("torch", "2.13.0", "torch/include/ATen/WrapDimUtils.h", "pytorch/pytorch")
    engine = helper.harvested_store(settings, tmp_path, torch_lr, header)
    with Session(engine) as session:
        kinds = {
            (row.error_type, row.file_path.endswith(".py")) for row in session.exec(select(Record))
        }
        chosen = bulk.draft_sites(session, limit=1000)
    assert {("warning", True), ("exception", False)} <= kinds  # both are in the store
    assert chosen
    with Session(engine) as session:
        for draft in chosen:
            record = session.get(Record, draft.site.record_id)
            assert record is not None
            assert record.error_type in ("exception", "assertion")
            assert draft.file_path.endswith(".py"), draft.file_path


def _one_verified(settings, tmp_path, file_path: str, chosen) -> tuple[Record, dict]:
    """One file of torch 2.13.0 harvested, its scripts generated, and the one whose record
    `chosen(record)` picks verified on the real release: that record, and its run's result."""
    source = ("torch", "2.13.0", file_path, "pytorch/pytorch")
    engine = helper.harvested_store(settings, tmp_path, source)
    made, _figures = bulk.generate_scripts(engine, settings)
    with Session(engine) as session:
        records = [session.get(Record, script.record_id) for script in made]
    (record,) = [record for record in records if record is not None and chosen(record)]
    outcomes, _figures = verification.verify_scripts(engine, settings, [record.id])
    assert outcomes[0].status == "passed", outcomes[0].reason
    return record, outcomes[0].result


def test_a_message_of_one_value_is_verified_by_its_raise_site(settings, tmp_path):
    """`assert self.store_preserves_zeros is None` raises an AssertionError with no message,
    and `raise InternalError(assert_msg)` one of the caller's: neither record's message has
    text for a pattern to read, so its run passes when the matcher finds the record by the
    traceback's innermost frame, its raise site (as it answers such a paste)."""
    record, result = _one_verified(
        settings,
        tmp_path,
        "torch/_inductor/analyze_preserves_zero_mask.py",
        lambda record: record.error_message == "{store_preserves_zeros_is_None}",
    )
    assert record.error_class == "AssertionError"
    assert result["trigger"]["message"] == ""
    assert "by its raise site" in result["trigger"]["detail"]
    record, result = _one_verified(
        settings,
        tmp_path / "internal",
        "torch/_export/error.py",
        lambda record: record.error_message == "{assert_msg}",
    )
    assert result["trigger"]["message"] == "errkb"


def test_a_fix_holds_before_its_call_imports_a_module_not_installed(settings, tmp_path):
    """`torch.onnx.export(...)` imports onnxscript when called past its guard, and this CPU
    environment has none: the fix stops at the first line past the raise, so the script
    verifies rather than failing on what the call would import next."""
    onnx = ("torch", "2.13.0", "torch/onnx/__init__.py", "pytorch/pytorch")
    engine = helper.harvested_store(settings, tmp_path, onnx)
    made, figures = bulk.generate_scripts(engine, settings)
    (export,) = [
        m for m in made if "onnxscript" in m.script or m.trigger_call.startswith("export(")
    ]
    outcomes, figures = verification.verify_scripts(
        engine, settings, [export.record_id], figures=figures
    )
    assert [outcome.status for outcome in outcomes] == ["passed"]
    assert figures["pytorch/pytorch"].not_importable == 0


def test_a_call_that_imports_a_module_not_installed_is_the_environment_s() -> None:
    """A check that fails on a module the call imports (not the script's fault) is counted
    apart, with the module, as a module that does not import is."""
    outcome = runner.RunOutcome(
        record_id="9393ebd05517e7f5",
        device="cpu",
        status="failed",
        reason="",
        duration_s=0.1,
        output_tail="",
        result={
            "trigger": {"status": "error", "detail": "ModuleNotFoundError: No module named 'x'"}
        },
        started_at=datetime.now(UTC),
    )
    reason = verification.failure_reason(outcome)
    assert reason.startswith(verification.IMPORTED_BY_THE_CALL)
    assert "No module named 'x'" in reason
    assert reason.partition(" (")[0] in verification.ENVIRONMENT


def test_what_a_call_leaves_on_disk_stays_in_its_scratch_folder(settings, tmp_path):
    """torch's compiler bisector writes the backend it is given to a status file in torch's
    cache (`<TMPDIR>/torchinductor_<user>/bisect/`), which every later `import torch` of the
    machine reads: a generated call (`update_bisect_status(backend_name='errkb', ...)`) once
    left it there and every vLLM module then failed to import ("Invalid backend: 'errkb'").
    Each script's TMPDIR and torch's and Triton's caches are folders of its scratch folder."""
    default = Path(tempfile.gettempdir()) / f"torchinductor_{getpass.getuser()}" / "bisect"
    before = sorted(default.rglob("*")) if default.exists() else []
    bisector = ("torch", "2.13.0", "torch/_inductor/compiler_bisector.py", "pytorch/pytorch")
    engine = helper.harvested_store(settings, tmp_path, bisector)
    made, _figures = bulk.generate_scripts(engine, settings)
    writers = [m.record_id for m in made if "backend_name='errkb'" in m.trigger_call]
    assert writers
    outcomes, _figures = verification.verify_scripts(engine, settings, writers)
    assert len(outcomes) == len(writers)
    assert (sorted(default.rglob("*")) if default.exists() else []) == before
    environment = runner.scratch_environment(tmp_path / "scratch")
    assert environment["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "scratch" / ".torchinductor")
    assert all(Path(folder).is_dir() for folder in environment.values())
    assert not any(Path(folder).name.isidentifier() for folder in environment.values())


def test_a_required_text_argument_the_guard_does_not_read_is_not_empty(settings, tmp_path):
    """`RendezvousParameters(backend=..., ...)` refuses an empty backend name before it
    checks the node counts: the placeholder of a required `str` the guard does not read is a
    non-empty text, so the trigger of the `min_nodes` check reaches it."""
    _record, result = _one_verified(
        settings,
        tmp_path,
        "torch/distributed/elastic/rendezvous/api.py",
        lambda record: "must be greater than zero" in record.error_message,
    )
    assert result["fix"]["state"]["call"].startswith("RendezvousParameters(backend='errkb'")
    assert "minimum number of rendezvous nodes (0)" in result["trigger"]["message"]


# The real-paste corpus's vLLM validation errors: the cases whose raising file is one of
# these (a folder ends with "/").
VALIDATION_FILES = (
    "vllm/sampling_params.py",
    "vllm/engine/arg_utils.py",
    "vllm/config/",
    "vllm/lora/",
)
VALIDATION_RELEASE = "vllm==0.33.0"
VERIFIED_SHARE = 0.5  # of the records that come first for them, verified on CPU


def _validation_case(case: dict) -> bool:
    raising = case["raisingFile"] or ""
    return case["project"] == "vllm" and any(
        raising.startswith(path) if path.endswith("/") else raising == path
        for path in VALIDATION_FILES
    )


def test_half_of_the_records_first_for_real_vllm_validation_pastes_are_verified_on_cpu(tmp_path):
    """The records /api/match puts first for the real pastes of vLLM's validation errors
    (sampling parameters, configs, engine arguments, LoRA), over a store of the release the
    scripts run on and the curated records: at least half of those with a raise site in that
    release get a generated reproducer that passes on it."""
    pytest.importorskip("torch", reason="the scripts run on the installed torch")
    store = accuracy.harvested_store(tmp_path / "store", (VALIDATION_RELEASE,), curated=DATA_DIR)
    cases = {name: case for name, case in load_cases().items() if _validation_case(case)}
    assert len(cases) >= 10
    firsts = set()
    for case in cases.values():
        answer = store.client.post(
            "/api/match", json={"text": case["paste"]}, params={"limit": TOP}
        )
        matches = answer.json()["matches"]
        if matches:
            firsts.add(matches[0]["id"])
    engine = store.client.app.state.services.engine
    settings = Settings(database_url=f"sqlite:///{store.database}", cache_dir=RELEASES.cache_dir)
    with Session(engine) as session:
        drafts = [
            d for d in bulk.draft_sites(session, "vllm-project/vllm") if d.site.record_id in firsts
        ]
    assert len(drafts) >= 5, sorted(firsts)  # the first records raised in this release
    assert {d.site.version for d in drafts} == {VALIDATION_RELEASE.partition("==")[2]}
    made, _figures = bulk.generate_scripts(
        engine,
        settings,
        "vllm-project/vllm",
        paths=sorted({d.file_path for d in drafts}),
        with_curated=True,  # the generator's own share, curated reproducers aside
    )
    ids = [m.record_id for m in made if m.record_id in {d.site.record_id for d in drafts}]
    outcomes, _verified = verification.verify_scripts(engine, settings, ids, workers=1)
    passed = {o.record_id for o in outcomes if o.status == "passed"}
    calls = {m.record_id: m.trigger_call for m in made}
    for draft in drafts:
        outcome = next((o for o in outcomes if o.record_id == draft.site.record_id), None)
        state = outcome.status if outcome else "no script"
        print(f"{draft.file_path}:{draft.site.line} {state} {calls.get(draft.site.record_id, '')}")
    print(f"verified {len(passed)} of {len(drafts)} first records")
    assert len(passed) >= VERIFIED_SHARE * len(drafts), [o.reason for o in outcomes]


def test_a_script_retargeted_to_another_release_pins_it_and_moves_its_lines():
    made = reproducer.generate(
        sites.SiteSpec("00000000000000aa", "ValueError", "demo", "1.0", "demo", 4, "scale"),
        "\ndef scale(factor: int):\n    if factor < 0:\n        raise ValueError('negative')\n",
        {},
    )
    assert isinstance(made, sites.Generated)
    moved = verification.retargeted(made.script, "1.1", 3)
    assert "version='1.1'," in moved
    assert "raise_line=7," in moved
    assert "guard_lines=(6, 6)," in moved
    assert (
        moved.replace("1.1", "1.0").replace("=7,", "=4,").replace("(6, 6)", "(3, 3)") == made.script
    )


def test_a_verified_generated_reproducer_that_stops_raising_on_a_newer_release_is_drift(
    settings, tmp_path, make_client
):
    """Drift runs each verified script on the newer release the store knows the record in.

    The store here knows vLLM 0.33.0 only, so two scripts verified on it are re-pinned as if
    verified on 0.32.0, one of them with a trigger value that vLLM accepts (as a newer release
    that relaxed its check would): the first still raises on 0.33.0 (`moved`, its lines moved
    back), the second stopped raising, and the check is shown as the curated ones' drift is
    (the max_tokens site also has a curated reproducer: the generator is measured on it too)."""
    settings = settings.model_copy(update={"cache_dir": RELEASES.cache_dir})
    engine = helper.harvested_store(settings, tmp_path, helper.VLLM_SAMPLING)
    made, _figures = bulk.generate_scripts(engine, settings, with_curated=True)
    tokens = next(m for m in made if m.trigger_call == "SamplingParams(max_tokens=0)")
    outcomes, _figures = verification.verify_scripts(engine, settings, [tokens.record_id])
    assert outcomes[0].status == "passed", outcomes[0].reason
    with unit_of_work(engine) as session:
        row = session.get(GeneratedReproducer, tokens.record_id)
        row.version = "0.32.0"
        row.script = verification.retargeted(row.script, "0.32.0", -3)
    found, unjudged = verification.check_drift(engine, settings, [tokens.record_id])
    assert unjudged == {}
    assert [(o.status, o.version) for o in found] == [("moved", "0.33.0")], found
    with unit_of_work(engine) as session:
        row = session.get(GeneratedReproducer, tokens.record_id)
        row.script = row.script.replace("max_tokens=0", "max_tokens=5")
    found, unjudged = verification.check_drift(engine, settings, [tokens.record_id])
    assert [(o.status, o.version) for o in found] == [("changed", "0.33.0")], found
    assert "stopped raising on vllm 0.33.0: trigger: raised nothing" in found[0].detail
    client = make_client()  # the record's reproducer (here the curated one) and its drift
    answer = client.get(f"/api/errors/{tokens.record_id}/reproducer").json()
    assert answer["drift"]["status"] == "changed"
    assert "stopped raising" in answer["drift"]["detail"]
    page = client.get(f"/errors/{tokens.record_id}").text
    assert "Raise site in vllm 0.33.0: <strong>changed</strong>" in page


SHIPPED_GENERATED = sorted((PROJECT_ROOT / "data" / "runs").glob("*-generated*.jsonl.gz"))
CI_SAMPLE_SIZE = 50
CI_SAMPLE_PASSING = 0.9


def _commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "no commit"


def test_a_sample_of_the_shipped_verified_reproducers_verifies_on_this_machine(
    harvested: accuracy.Harvested, tmp_path
) -> None:
    """What verified on one machine must verify on a fresh one: each run draws its own
    sample (seeded by the commit) of the generated reproducers data/runs/ ships for the
    current releases, imports them into a store harvested here, and runs them again."""
    latest = {  # a record verified again in a later file: its latest run
        line.record_id: line
        for _, line in runs.read_runs(SHIPPED_GENERATED)[0]
        if line.generated is not None
        and upstreams.BY_PACKAGE[line.generated.package].current_release
        == f"{line.generated.package}=={line.generated.version}"
    }
    lines = sorted(latest.values(), key=lambda line: line.record_id)
    seed = _commit()
    sample = random.Random(seed).sample(lines, CI_SAMPLE_SIZE)
    store = accuracy.harvested_store(tmp_path, (), start_from=harvested.database)
    engine = store.client.app.state.services.engine
    chosen = tmp_path / "sample.jsonl"
    chosen.write_text(
        "".join(json.dumps(line.model_dump(mode="json", by_alias=True)) + "\n" for line in sample)
    )
    with unit_of_work(engine) as session:
        report = runs.import_runs(session, [chosen])
    assert (report.added, report.without_record) == (CI_SAMPLE_SIZE, []), report
    settings = Settings(database_url=str(engine.url), cache_dir=RELEASES.cache_dir)
    ids = [line.record_id for line in sample]
    outcomes, figures = verification.verify_scripts(engine, settings, ids, workers=2)
    failed = {o.record_id: o.reason for o in outcomes if o.status != "passed"}
    not_importable = sum(figure.not_importable for figure in figures.values())
    assert len(outcomes) + not_importable == CI_SAMPLE_SIZE
    # a script whose module did not import here did not verify: it counts against the sample
    limit = (1 - CI_SAMPLE_PASSING) * CI_SAMPLE_SIZE
    assert len(failed) + not_importable <= limit, (seed, failed, figures)
