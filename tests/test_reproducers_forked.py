"""Generated scripts run in children forked from one process per release: CI's fixed sample
of torch sites generated and verified on the installed release within its time budget (a
timing goal: marker perf), and a child that hangs or dies reported as such while the zygote
goes on."""

import time

import pytest
from sqlmodel import Session

from app.reproducers import forked
from app.reproducers.generation import bulk, verification
from tests.helpers import generated as helper

pytest.importorskip("torch", reason="each zygote imports the installed torch's release")

# Raise sites of torch 2.13.0 (the installed release the reproducers pin) whose generated
# reproducer passed on it: constructor arguments of optimizers and schedulers, arguments of
# torch.nn.functional. 56 sites; CI generates and verifies them all.
CI_SAMPLE: dict[str, tuple[int, ...]] = {
    "torch/optim/sgd.py": (46, 48, 50, 64, 71, 73, 497),
    "torch/optim/adam.py": (59, 61, 67, 106, 113, 580, 827),
    "torch/optim/adagrad.py": (46, 48, 50, 52, 56, 73, 75, 450, 563, 566),
    "torch/optim/lr_scheduler.py": (814, 922, 927, 1127, 1513, 1661, 1765, 2155, 2529),
    "torch/nn/functional.py": (
        *(493, 613, 1489, 1510, 1543, 1594, 1654, 1716, 1829, 2892, 2896, 3342),
        *(3375, 4657, 5076, 5091, 5130, 5137, 5590, 5598, 5987, 6028, 6032),
    ),
}
CI_BUDGET_S = 300.0  # generous: docs/benchmarks.md, "Other measures of the generated reproducers"

HANGS = """
import time
print("started", flush=True)
time.sleep(60)
"""
DIES = """
import os
os.abort()
"""


@pytest.mark.perf
def test_ci_sample_of_torch_sites_is_generated_and_verified_within_five_minutes(settings, tmp_path):
    start = time.perf_counter()
    files = [("torch", "2.13.0", path, "pytorch/pytorch") for path in CI_SAMPLE]
    engine = helper.harvested_store(settings, tmp_path, *files)
    made, _figures = bulk.generate_scripts(engine, settings)
    with Session(engine) as session:
        drafts = bulk.draft_sites(session)
    sample = {d.site.record_id for d in drafts if d.site.line in CI_SAMPLE[d.file_path]}
    assert len(sample) >= 50
    assert sample <= {m.record_id for m in made}
    outcomes, figures = verification.verify_scripts(engine, settings, sorted(sample), workers=2)
    failed = {o.record_id: o.reason for o in outcomes if o.status != "passed"}
    assert not failed
    assert {o.record_id for o in outcomes} == sample
    assert figures["pytorch/pytorch"].verified == len(sample)
    assert all(o.result["fix"]["state"]["raiseRan"] is False for o in outcomes)
    assert time.perf_counter() - start < CI_BUDGET_S


def test_a_child_that_hangs_is_killed_at_the_limit_and_one_that_dies_has_no_result(
    settings, tmp_path
):
    scripts = []
    for name, text in (("hangs", HANGS), ("dies", DIES)):
        path = tmp_path / f"{name}.py"
        path.write_text(text, encoding="utf-8")
        scripts.append(forked.Script(name, path, tmp_path))
    environment = verification._environment(settings)
    with forked.Zygote("torch", "2.13.0", "torch", environment, 300) as zygote:
        assert zygote.error is None
        hung = zygote.run(scripts[0], timeout_s=2)
        died = zygote.run(scripts[1], timeout_s=30)
    assert hung.status == "error"
    assert hung.reason == "timed out after 2 s"
    assert "started" in hung.output_tail
    assert died.status == "error"
    assert died.reason.startswith("exited with -6 and printed no result")


def test_a_release_module_that_cannot_be_imported_says_why(settings):
    environment = verification._environment(settings)
    with forked.Zygote("torch", "2.13.0", "torch.errkb_absent", environment, 300) as zygote:
        assert zygote.error is not None
        assert "errkb_absent" in zygote.error


def test_a_target_module_is_imported_before_its_scripts_or_says_which_import_failed(settings):
    """Outside any script's time limit: a module that imports is ready, one that does not
    says why, and the zygote goes on."""
    environment = verification._environment(settings)
    with forked.Zygote("torch", "2.13.0", "torch", environment, 300) as zygote:
        assert zygote.load("torch.optim.sgd", 300) is None
        failed = zygote.load("torch.errkb_absent", 300)
        assert failed is not None
        assert "No module named 'torch.errkb_absent'" in failed
        assert zygote.load("torch.optim.adam", 300) is None


# What a generated fix did (modelopt_checkpoint.prepare_output_dir(output_dir='',
# overwrite=True)): an empty path is where the process runs, and it was removed.
REMOVES_WHERE_IT_RUNS = """
import json, os, pathlib, shutil
pathlib.Path("~/written-home").expanduser().write_text("x")
shutil.rmtree(pathlib.Path("").resolve())
print(json.dumps({"id": "removes", "status": "passed", "reason": "", "device": "cpu"}))
"""


def test_a_child_runs_in_its_own_scratch_folder_and_home(settings, tmp_path, monkeypatch):
    """What upstream code a generated script calls writes or removes relative to where it
    runs: the script's own folder, never the caller's working directory or home."""
    caller = tmp_path / "checkout"
    (caller / "app").mkdir(parents=True)
    (caller / "app" / "keep.py").write_text("kept\n")
    monkeypatch.chdir(caller)
    scratch = tmp_path / "scripts" / "removes"
    scratch.mkdir(parents=True)
    script = tmp_path / "scripts" / "removes.py"
    script.write_text(REMOVES_WHERE_IT_RUNS, encoding="utf-8")
    environment = verification._environment(settings) | {"HOME": str(caller)}
    with forked.Zygote("torch", "2.13.0", "torch", environment, 300) as zygote:
        zygote.run(forked.Script("removes", script, scratch), timeout_s=30)
    assert (caller / "app" / "keep.py").read_text() == "kept\n"
    assert not (caller / "written-home").exists()
    assert not scratch.exists()  # what it removed was its own folder
