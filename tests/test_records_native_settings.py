"""The settings a native record's page names: chosen by the record's words, each cited where
its release names it; none for a record raised in Python."""

import json
from pathlib import Path

from app.records.model import ErrorRecord
from app.records.native_settings import SETTINGS, native_explanation

DATA = Path(__file__).resolve().parents[1] / "data" / "records"


def _record(record_id: str) -> ErrorRecord:
    return ErrorRecord.model_validate(json.loads((DATA / f"{record_id}.json").read_text()))


def _typed(record_id: str) -> list[str]:
    explanation = native_explanation(_record(record_id))
    return [] if explanation is None else [s.typed_as for s in explanation.settings]


def test_each_native_record_gets_the_settings_of_its_kind() -> None:
    assert _typed("7087d0ce19a5cdec") == [
        "CUDA_LAUNCH_BLOCKING=1",
        "TORCH_USE_CUDA_DSA=1 (when building torch)",
    ]
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True" in _typed("7bfe411d3d58a9c0")
    assert "CUDA_VISIBLE_DEVICES" in _typed("f59af6fbbd5560a7")
    watchdog = _typed("7921f04022ee6caf")
    assert {"NCCL_DEBUG=INFO", "NCCL_P2P_DISABLE=1", "init_process_group(timeout=...)"} <= set(
        watchdog
    )
    capture = _typed("ffb8e23a4a4cdb41")
    assert "--enforce-eager" in capture
    assert "CUDA_LAUNCH_BLOCKING=1" in capture


def test_a_python_record_or_an_unrelated_native_one_gets_none() -> None:
    assert native_explanation(_record("e778062eb5812858")) is None  # torch/optim/optimizer.py
    assert native_explanation(_record("2fcab530d24e91b4")) is None  # index put: no setting


def test_every_setting_is_cited_at_its_release_tag() -> None:
    explanation = native_explanation(_record("a85e5b91e9b80a8c"))
    assert explanation is not None
    assert explanation.release == "torch==2.13.0"
    for setting in explanation.settings:
        source = setting.source
        assert source.github_url is not None
        assert f"/blob/{source.ref}/{source.file_path}" in source.github_url
        assert (source.line_number is None) == source.file_path.endswith(".cpp")
    assert all(setting.help and setting.applies.pattern for setting in SETTINGS)
