"""The CI action (action.yml): its explain step, run as GitHub runs it (bash, the inputs in
its environment, GITHUB_STEP_SUMMARY a file), on real-shaped logs under a real server."""

import os
import re
import subprocess
from pathlib import Path

import yaml

from app.config import PROJECT_ROOT
from tests.helpers.logs import FREE_BUFFERS, FREE_BUFFERS_ID, TORCHRUN_LOG, VLLM_LOG, VMM_SLICE_ID
from tests.helpers.served import ERRKB, client_env

ACTION = yaml.safe_load((PROJECT_ROOT / "action.yml").read_text())
RUN_S = 120


def _step(name: str) -> dict:
    (step,) = [step for step in ACTION["runs"]["steps"] if step["name"] == name]
    return step


def _summarize(tmp_path: Path, inputs: dict[str, str]) -> tuple[str, subprocess.CompletedProcess]:
    """Run the explain step with these inputs; the job summary it leaves and the run."""
    step = _step("Explain the log in the job summary")
    assert step["shell"] == "bash"
    env = {
        name: re.sub(r"\$\{\{ inputs\.(\w+) \}\}", lambda m: inputs[m[1]], value)
        for name, value in step["env"].items()
    }
    # What the install step leaves: an `errkb` command on the PATH (this checkout's).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    errkb = bin_dir / "errkb"
    errkb.write_text("#!/bin/sh\nexec " + " ".join(f"'{part}'" for part in ERRKB) + ' "$@"\n')
    errkb.chmod(0o755)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    environment = client_env(**env) | {
        "GITHUB_STEP_SUMMARY": str(summary),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    run = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=RUN_S,
    )
    return summary.read_text(), run


def test_the_action_is_composite_with_a_log_and_a_server() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert ACTION["inputs"]["log"]["required"] is True
    assert set(ACTION["inputs"]) >= {"log", "server"}
    install = _step("Install errkb")["run"]
    assert '"$GITHUB_ACTION_PATH"' in install  # errkb from the action's own checkout


def test_a_vllm_and_a_torchrun_log_are_explained_in_the_summary(
    errkb_server: str, tmp_path: Path
) -> None:
    log = tmp_path / "job.log"
    log.write_text(VLLM_LOG + "...\n" * 50 + TORCHRUN_LOG)
    summary, run = _summarize(tmp_path, {"log": str(log), "server": errkb_server})
    assert run.returncode == 0, run.stderr
    assert summary.startswith("earlier step\n### errkb: 2 known errors in `job.log`\n")
    assert (
        f"#### [RuntimeError: {FREE_BUFFERS}]({errkb_server}/errors/{FREE_BUFFERS_ID})\n" in summary
    )
    assert f"]({errkb_server}/errors/{VMM_SLICE_ID})\n" in summary
    assert "**Fix:** Audit all free\\_buffer call sites" in summary
    assert "\x1b" not in summary


def test_a_log_with_no_known_error_says_so(errkb_server: str, tmp_path: Path) -> None:
    log = tmp_path / "clean.log"
    log.write_text("INFO all good\n")
    summary, run = _summarize(tmp_path, {"log": str(log), "server": errkb_server})
    assert run.returncode == 0
    assert summary == "earlier step\n### errkb: no known error in `clean.log`\n"


def test_a_failure_is_said_in_the_summary_and_leaves_the_job_alone(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(VLLM_LOG)
    summary, run = _summarize(tmp_path, {"log": str(log), "server": "http://127.0.0.1:9"})
    assert run.returncode == 0
    assert summary == f"earlier step\nerrkb could not explain `{log}`: see the log of this step.\n"
    assert run.stderr == "error: cannot reach http://127.0.0.1:9: Connection refused\n"
