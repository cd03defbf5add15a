"""app.reproducers.native_capture: the CPU-capable triggers run here (`--device cpu`) into a
folder whose cases must keep the real-paste corpus's format, a trigger that raises nothing or
another error is written with its problem, and the module starts on a bare Python (it runs
on a GPU machine that has nothing of errkb's)."""

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.config import PROJECT_ROOT
from app.reproducers import native_capture
from tests.helpers.real_pastes import assert_well_formed

CAPTURE = re.compile(r"^errkb-capture:[a-z0-9_]+@\d[\w.+-]*/.+$")
CPU = [trigger.name for trigger in native_capture.TRIGGERS if "cpu" in trigger.devices]


def cases(folder: Path) -> dict[str, dict[str, Any]]:
    return {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("torch-*.json"))
    }


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One capture of every CPU-capable trigger (a fresh interpreter each, importing torch)."""
    out = tmp_path_factory.mktemp("cpu-pastes")
    assert native_capture.main(["--out", str(out), "--device", "cpu", "--jobs", "2"]) == 0
    return out


def test_every_cpu_trigger_is_captured_as_a_real_paste_case(captured: Path) -> None:
    found = cases(captured)
    assert sorted(case["source"].split(":")[1].split("@")[0] for case in found.values()) == sorted(
        CPU
    )
    assert len(CPU) >= 4
    for name, case in found.items():
        assert "captureProblem" not in case, (name, case.get("captureProblem"))
        assert_well_formed(name, case, number_prefix="g", source=CAPTURE)
        assert case["project"] == "torch"
        assert case["shape"] == "full-traceback"
        assert case["release"].startswith("torch==")
        assert case["raisingFile"], name  # each CPU trigger's file is known


def test_each_paste_is_a_python_traceback_ending_with_the_declared_error(captured: Path) -> None:
    declared = {trigger.name: trigger for trigger in native_capture.TRIGGERS}
    for name, case in cases(captured).items():
        trigger = declared[case["source"].split(":")[1].split("@")[0]]
        paste = case["paste"]
        assert paste.startswith(native_capture.TRACEBACK), name
        assert "  File " in paste, name
        line = native_capture.exception_line(paste) or ""
        assert line.startswith(f"{trigger.exception_class}: "), name
        assert case["exceptionClass"] == trigger.exception_class
        assert bool(case.get("raisedInNative")) == trigger.native


def test_a_native_error_s_file_is_the_one_the_cpp_exception_names(captured: Path) -> None:
    """The second run with TORCH_SHOW_CPP_STACKTRACES found each declared native file; a
    Python raise has no C++ location."""
    summary = [
        json.loads(line)
        for line in (captured / native_capture.SUMMARY).read_text(encoding="utf-8").splitlines()
    ]
    assert {line["trigger"] for line in summary} == set(CPU)
    for line in summary:
        native = line["raisingFile"].endswith(".cpp")
        assert line["located"] == (line["raisingFile"] if native else None), line


def test_a_trigger_that_raises_nothing_or_another_error_is_written_with_its_problem(
    tmp_path: Path,
) -> None:
    """On CPU the device-mismatch trigger has one device and raises nothing; pinning a
    tensor where no accelerator is raises, but not the declared message."""
    named = ["--trigger", "device_mismatch_mm", "--trigger", "pin_cuda_tensor", "--jobs", "2"]
    assert native_capture.main(["--out", str(tmp_path), "--device", "cpu", *named]) == 1
    found = {case["source"].split(":")[1].split("@")[0]: case for case in cases(tmp_path).values()}
    assert found["device_mismatch_mm"]["captureProblem"] == "raised nothing"
    assert found["pin_cuda_tensor"]["captureProblem"].startswith("the message lacks")
    summary = (tmp_path / native_capture.SUMMARY).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["captureProblem"] is not None for line in summary] == [True, True]


def test_the_exception_line_is_the_last_traceback_s_and_may_span_lines() -> None:
    output = (
        'warning: something\nTraceback (most recent call last):\n  File "a.py", line 1\n'
        "ValueError: first\n\nDuring handling...\n\nTraceback (most recent call last):\n"
        '  File "b.py", line 2, in f\n    g()\ntorch.AcceleratorError: CUDA error: x\n'
        "CUDA kernel errors might be asynchronously reported\n"
    )
    assert native_capture.exception_line(output) == "torch.AcceleratorError: CUDA error: x"
    assert native_capture.exception_line("no traceback\n") is None


def test_the_located_file_drops_the_build_s_checkout() -> None:
    at = "Exception raised from check at /__w/pytorch/pytorch/aten/src/ATen/native/Conv.cpp:725 ("
    assert native_capture.located_file(at) == "aten/src/ATen/native/Conv.cpp"
    at = "Exception raised from f at /pytorch/torch/csrc/utils/tensor_numpy.cpp:141 (most"
    assert native_capture.located_file(at) == "torch/csrc/utils/tensor_numpy.cpp"
    assert native_capture.located_file("RuntimeError: x") is None


def test_every_trigger_declares_a_corpus_conform_expectation() -> None:
    names = [trigger.name for trigger in native_capture.TRIGGERS]
    assert len(names) == len(set(names)) >= 25
    for trigger in native_capture.TRIGGERS:
        assert trigger.fragment
        assert trigger.exception_class
        assert set(trigger.devices) <= {"cuda", "cpu"}
        suffixes = (".cpp", ".cu", ".h", ".hpp") if trigger.native else (".py",)
        assert trigger.raising_file is None or trigger.raising_file.endswith(suffixes)


def test_the_module_imports_only_the_standard_library() -> None:
    """A GPU machine has Python and torch only: importing the module (and its packages'
    __init__) loads nothing outside the standard library."""
    probe = (
        "import sys; before = set(sys.modules); import app.reproducers.native_capture; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(PROJECT_ROOT)!r}); {probe}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = {name.split(".")[0] for name in done.stdout.split()}
    assert "app" in loaded
    assert loaded - {"app"} <= set(sys.stdlib_module_names), loaded - set(sys.stdlib_module_names)


def test_the_located_file_confirms_fills_or_contradicts_the_declared_one() -> None:
    """A declared file the C++ exception agrees with is kept, an undeclared one is taken from
    the exception, a disagreeing one makes the case a problem."""
    output = (
        f"{native_capture.TRACEBACK}\n"
        '  File "x.py", line 1, in <module>\n'
        "RuntimeError: No backend type associated with device type cpu\n"
    )
    declared = next(t for t in native_capture.TRIGGERS if t.name == "no_backend_for_cpu")
    undeclared = replace(declared, raising_file=None)
    outcome = native_capture.Outcome(output, 1)
    machine_at = ("2.11.0+cu130", "NVIDIA H200")
    same = declared.raising_file
    kept = native_capture.case(declared, outcome, *machine_at, same)
    assert kept["raisingFile"] == same
    assert "captureProblem" not in kept
    assert kept["source"] == "errkb-capture:no_backend_for_cpu@2.11.0+cu130/NVIDIA H200"
    assert kept["release"] == "torch==2.11.0+cu130"
    other = "torch/csrc/distributed/c10d/ProcessGroup.hpp"
    filled = native_capture.case(undeclared, outcome, *machine_at, other)
    assert filled["raisingFile"] == other
    assert "captureProblem" not in filled
    contradicted = native_capture.case(declared, outcome, *machine_at, other)
    assert contradicted["captureProblem"] == f"raised at {other}, declared {same}"
    cut = native_capture.case(declared, native_capture.Outcome("", None), *machine_at, None)
    assert cut["captureProblem"] == "cut at the time limit"
