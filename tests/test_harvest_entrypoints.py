"""How a raise site is reached: the entry points found above it in the callers graph, on
small releases written here (vLLM's named entry points, torch's public API) and on the real
vLLM 0.33.0."""

from pathlib import Path
from textwrap import dedent

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.curation.scaffold import scaffold_record
from app.harvest import drafts, harvest_tree

VLLM = {
    "vllm/entrypoints/llm.py": """
        from vllm.engine.arg_utils import EngineArgs


        class LLM:
            def __init__(self, model, max_model_len=None):
                engine_args = EngineArgs(model=model, max_model_len=max_model_len)
                self.config = engine_args.create_engine_config()
        """,
    "vllm/engine/arg_utils.py": """
        from dataclasses import dataclass

        from vllm.config.model import ModelConfig


        @dataclass
        class EngineArgs:
            model: str = "facebook/opt-125m"
            max_model_len: int | None = None

            def create_model_config(self):
                return ModelConfig(self.model, self.max_model_len)

            def create_engine_config(self):
                return self.create_model_config()
        """,
    "vllm/config/model.py": """
        from dataclasses import dataclass


        @dataclass
        class ModelConfig:
            model: str
            max_model_len: int | None = None

            def __post_init__(self):
                self._verify_max_len()

            def _verify_max_len(self):
                if self.max_model_len is not None and self.max_model_len > 4096:
                    raise ValueError(
                        f"User-specified max_model_len ({self.max_model_len}) is too large"
                    )


        def unreached(value):
            if value is None:
                raise ValueError("nothing calls the function that raises this")
        """,
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
    return root


def _entry_points(root: Path, files: dict[str, str], repo: str) -> dict[str, list[dict]]:
    result = harvest_tree(_write(root, files), repo=repo, ref="v9.9.9", analyzed_at="x")
    return {
        d.record["errorMessage"]: d.context["explanation"].get("entryPoints", [])
        for d in result.drafts
    }


def test_the_chain_up_to_the_engine_arguments_and_llm_is_found(tmp_path: Path) -> None:
    found = _entry_points(tmp_path, VLLM, "vllm-project/vllm")
    reached = found["User-specified max_model_len ({max_model_len}) is too large"]
    assert [(e["label"], e["calls"]) for e in reached] == [
        (
            "the engine arguments (`vllm serve` flags, `LLM(...)` keywords)",
            [
                "EngineArgs.create_engine_config",
                "EngineArgs.create_model_config",
                "ModelConfig.__post_init__",
                "ModelConfig._verify_max_len",
            ],
        ),
        (
            "LLM(...)",
            [
                "LLM.__init__",
                "EngineArgs.create_engine_config",
                "EngineArgs.create_model_config",
                "ModelConfig.__post_init__",
                "ModelConfig._verify_max_len",
            ],
        ),
    ]
    # each chain is cited where it leaves its entry point
    assert reached[1]["source"]["filePath"] == "vllm/entrypoints/llm.py"
    assert reached[1]["source"]["lineNumber"] == 8  # `self.config = ...` (line 1 is blank)
    assert found["nothing calls the function that raises this"] == []


def test_a_public_torch_class_is_its_own_entry_point_and_a_private_one_is_not(
    tmp_path: Path,
) -> None:
    files = {
        "torch/optim/sgd.py": """
            class SGD:
                def __init__(self, params, lr=0.001, nesterov=False):
                    _check_nesterov(nesterov, lr)


            def _check_nesterov(nesterov, lr):
                if nesterov and lr <= 0:
                    raise ValueError("Nesterov momentum requires a positive learning rate")
            """,
        "torch/_internal/helpers.py": """
            def _helper(value):
                if value < 0:
                    raise ValueError("an internal value must not be negative")
            """,
    }
    found = _entry_points(tmp_path, files, "pytorch/pytorch")
    nesterov = found["Nesterov momentum requires a positive learning rate"]
    assert [(e["label"], e["calls"]) for e in nesterov] == [
        ("torch.optim.sgd.SGD(...)", ["SGD.__init__", "_check_nesterov"])
    ]
    assert found["an internal value must not be negative"] == []


def test_the_record_page_and_its_json_show_how_it_is_reached(
    tmp_path: Path, session: Session, client: TestClient
) -> None:
    root = _write(tmp_path / "src", VLLM)
    release = drafts.resolve_release(str(root), repo="vllm-project/vllm", ref="v9.9.9")
    result, _ = drafts.harvest_release(session, release)
    session.commit()
    draft = next(d for d in result.drafts if "too large" in d.record["errorMessage"])
    document = client.get(f"/api/errors/{draft.record['id']}").json()
    labels = [e["label"] for e in document["explanation"]["entryPoints"]]
    assert labels[-1] == "LLM(...)"
    page = client.get(f"/errors/{draft.record['id']}").text
    reached = page[page.index("Reached from") : page.index('id="source"')]
    assert "<code>LLM(...)</code>: LLM.__init__ → EngineArgs.create_engine_config" in reached
    assert "vllm/entrypoints/llm.py:8" in reached


def test_a_curated_file_starts_its_triggers_from_the_entry_points(tmp_path: Path) -> None:
    result = harvest_tree(
        _write(tmp_path, VLLM), repo="vllm-project/vllm", ref="v9.9.9", analyzed_at="x"
    )
    draft = next(d for d in result.drafts if "too large" in d.record["errorMessage"])
    written = scaffold_record(draft.record, draft.context)
    assert (
        "reached from LLM(...) (LLM.__init__ -> EngineArgs.create_engine_config -> "
        "EngineArgs.create_model_config -> ModelConfig.__post_init__ -> "
        "ModelConfig._verify_max_len)"
    ) in written["triggerScenarios"]


@pytest.mark.network  # downloads vLLM 0.33.0 from the package index once
def test_the_real_max_model_len_check_is_reached_from_the_engine_arguments() -> None:
    from tests.helpers.releases import RELEASES

    root = RELEASES.ensure_unpacked("vllm", "0.33.0")
    release = drafts.resolve_release("vllm==0.33.0", releases=RELEASES)
    result = harvest_tree(
        root,
        repo=release.repo,
        ref=release.ref,
        analyzed_at="x",
        path_prefix=release.path_prefix,
        package_dir=release.package_dir,
    )
    by_message = {d.record["errorMessage"]: d for d in result.drafts}
    too_long = next(m for m in by_message if m.startswith("User-specified max_model_len ("))
    reached = by_message[too_long].context["explanation"]["entryPoints"]
    assert reached[0]["label"].startswith("the engine arguments")
    assert reached[0]["calls"][:2] == [
        "EngineArgs.create_engine_config",
        "EngineArgs.create_model_config",
    ]
    assert reached[0]["calls"][-1] == by_message[too_long].function
    # each chain leaves its entry point on a line that calls the next function by name
    checked = 0
    for draft in result.drafts:
        for entry in draft.context.get("explanation", {}).get("entryPoints", []):
            if len(entry["calls"]) < 2:
                continue
            owner, _, name = entry["calls"][1].rpartition(".")
            called_as = owner if name in ("__init__", "__post_init__") else name
            source = entry["source"]
            line = (root / source["filePath"]).read_text().splitlines()[source["lineNumber"] - 1]
            assert f"{called_as}(" in line, (entry, line)
            checked += 1
    assert checked > 100
