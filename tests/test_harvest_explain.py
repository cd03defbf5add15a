"""A draft's explanation: the settings its guard and message name, resolved against the
release's own settings files, the message's advice and the trigger in words; on a small
release written here, on the store and page, and on the real vLLM 0.33.0 files."""

import ast
import importlib.util
import re
import shutil
from dataclasses import replace
from pathlib import Path
from textwrap import dedent

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session
from typer.testing import CliRunner

from app.cli.commands import app
from app.harvest import drafts, harvest_tree
from app.records.explanation import record_explanation
from app.records.locations import Location
from app.records.release_history import History

runner = CliRunner()

REPO, REF = "vllm-project/vllm", "v9.9.9"
RELEASE = {
    "vllm/config/model.py": '''
        from dataclasses import dataclass
        from pydantic import Field


        @dataclass
        class ModelConfig:
            max_model_len: int = Field(default=None, ge=-1)
            """Model context length (prompt and output)."""
            seed: int = 0
            """Random seed."""
        ''',
    "vllm/config/cache.py": '''
        from dataclasses import dataclass


        @dataclass
        class CacheConfig:
            gpu_memory_utilization: float = 0.9
            """The fraction of GPU memory to be used for the model executor."""
        ''',
    "vllm/engine/arg_utils.py": """
        from dataclasses import dataclass

        from vllm.config.cache import CacheConfig
        from vllm.config.model import ModelConfig


        @dataclass
        class EngineArgs:
            model: str = "facebook/opt-125m"
            max_model_len: int = ModelConfig.max_model_len
            gpu_memory_utilization: float = CacheConfig.gpu_memory_utilization

            @staticmethod
            def add_cli_args(parser):
                parser.add_argument("--model")
                parser.add_argument("--max-model-len")
                parser.add_argument(
                    "--gpu-memory-utilization",
                    "--device-memory-utilization",
                    dest="gpu_memory_utilization",
                )
        """,
    "vllm/envs.py": """
        import os
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            VLLM_ENGINE_TIMEOUT_S: int = 60

        environment_variables = {
            # How long to wait for the engine, in seconds.
            "VLLM_ENGINE_TIMEOUT_S": lambda: int(os.getenv("VLLM_ENGINE_TIMEOUT_S", "60")),
        }
        """,
    "vllm/worker/checks.py": """
        import os

        from vllm import envs


        def check_memory(available_memory, needed_memory, max_model_len):
            if needed_memory > available_memory:
                raise ValueError(
                    f"The model's max seq len ({max_model_len}) needs more KV cache memory. "
                    "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`. "
                    "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
                    "for more details."
                )


        class Runner:
            def __init__(self, model_config):
                self.max_len = model_config.max_model_len

            def run(self, tokens):
                if tokens > self.max_len:
                    raise ValueError("the prompt is longer than the model allows")

            def wait(self):
                if envs.VLLM_ENGINE_TIMEOUT_S < 0:
                    raise ValueError("the engine timeout must not be negative")


        def load(model):
            if model is None:
                raise ValueError("no model was given to load")


        def check_length(length, limit):
            if length > limit:
                raise ValueError(
                    "The prompt does not fit in max_model_len, please shorten it instead."
                )


        def check_port():
            port = os.getenv("VLLM_HOST_PORT", "8000")
            if not port.isdigit():
                raise ValueError("the port must be a number")
        """,
}


def _write(root: Path) -> Path:
    for name, text in RELEASE.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
    return root


def _explanations(root: Path) -> dict[str, dict]:
    result = harvest_tree(_write(root), repo=REPO, ref=REF, analyzed_at="2026-01-01T00:00:00Z")
    return {d.record["errorMessage"]: d.context["explanation"] for d in result.drafts}


def _typed(explanation: dict) -> list[str]:
    return [setting["typedAs"] for setting in explanation["settings"]]


def test_the_message_names_flags_with_their_help_default_and_definition(tmp_path: Path) -> None:
    memory = next(e for m, e in _explanations(tmp_path).items() if m.startswith("The model"))
    assert _typed(memory) == ["--max-model-len", "--gpu-memory-utilization"]
    max_len, utilization = memory["settings"]
    assert max_len["kind"] == "flag"
    assert max_len["default"] == "None"  # Field(default=None): the borrowed config default
    assert max_len["help"] == "Model context length (prompt and output)."
    assert max_len["via"] == "message"
    assert max_len["source"]["filePath"] == "vllm/engine/arg_utils.py"
    assert max_len["source"]["lineNumber"] == 11
    assert max_len["source"]["githubUrl"].endswith(f"{REF}/vllm/engine/arg_utils.py#L11")
    assert utilization["default"] == "0.9"
    assert utilization["help"] == "The fraction of GPU memory to be used for the model executor."


def test_the_advice_sentences_link_the_settings_they_name(tmp_path: Path) -> None:
    memory = next(e for m, e in _explanations(tmp_path).items() if m.startswith("The model"))
    assert memory["advice"] == [
        {
            "text": "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`.",
            "settings": ["--gpu-memory-utilization", "--max-model-len"],
            "url": None,
        },
        {
            "text": "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
            "for more details.",
            "settings": [],
            "url": "https://docs.vllm.ai/en/latest/configuration/conserving_memory/",
        },
    ]
    assert memory["trigger"]["text"] == "raised when `needed_memory > available_memory`"
    assert memory["trigger"]["source"]["filePath"] == "vllm/worker/checks.py"


def test_a_guard_name_is_followed_through_an_assignment_to_its_flag(tmp_path: Path) -> None:
    explained = _explanations(tmp_path)
    too_long = explained["the prompt is longer than the model allows"]
    assert _typed(too_long) == ["--max-model-len"]
    assert too_long["settings"][0]["via"] == "guard"
    assert too_long["trigger"]["text"] == (
        "raised when `tokens > self.max_len`, where `self.max_len` is `--max-model-len`"
    )
    timeout = explained["the engine timeout must not be negative"]
    assert timeout["settings"] == [
        {
            "name": "VLLM_ENGINE_TIMEOUT_S",
            "kind": "env",
            "typedAs": "VLLM_ENGINE_TIMEOUT_S",
            "default": "60",
            "help": "How long to wait for the engine, in seconds.",
            "via": "guard",
            "source": {
                "ref": REF,
                "filePath": "vllm/envs.py",
                "lineNumber": 10,
                "githubUrl": f"https://github.com/{REPO}/blob/{REF}/vllm/envs.py#L10",
            },
        }
    ]


def test_a_bare_common_word_is_no_setting_and_nothing_is_invented(tmp_path: Path) -> None:
    explained = _explanations(tmp_path)
    no_model = explained["no model was given to load"]
    assert no_model["settings"] == []  # `model` is a flag, but a local `model` is not it
    assert no_model["advice"] == []
    assert no_model["trigger"]["text"] == "raised when `model is None`"


def test_a_setting_named_bare_and_advice_inside_a_sentence_are_told(tmp_path: Path) -> None:
    explained = _explanations(tmp_path)
    too_long = explained["The prompt does not fit in max_model_len, please shorten it instead."]
    assert _typed(too_long) == ["--max-model-len"]
    assert too_long["settings"][0]["via"] == "message"
    assert [(a["text"], a["settings"]) for a in too_long["advice"]] == [
        (
            "The prompt does not fit in max_model_len, please shorten it instead.",
            ["--max-model-len"],
        )
    ]


def test_an_environment_variable_the_function_reads_reaches_its_guard(tmp_path: Path) -> None:
    port = _explanations(tmp_path)["the port must be a number"]
    (setting,) = port["settings"]
    assert (setting["kind"], setting["typedAs"], setting["default"], setting["via"]) == (
        "env",
        "VLLM_HOST_PORT",
        "'8000'",
        "guard",
    )
    line = dedent(RELEASE["vllm/worker/checks.py"]).split("\n")[setting["source"]["lineNumber"] - 1]
    assert 'os.getenv("VLLM_HOST_PORT", "8000")' in line


def test_a_torch_function_names_its_own_parameters(tmp_path: Path) -> None:
    module = tmp_path / "torch" / "optim" / "adam.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        dedent(
            """
            class Adam:
                def __init__(self, params, lr=1e-3, *, foreach=None):
                    if not 0.0 <= lr:
                        raise ValueError(f"Invalid learning rate: {lr}")
            """
        )
    )
    result = harvest_tree(tmp_path, repo="pytorch/pytorch", ref="v2.13.0", analyzed_at="x")
    (draft,) = result.drafts
    (setting,) = draft.context["explanation"]["settings"]
    assert (setting["kind"], setting["typedAs"], setting["default"]) == (
        "parameter",
        "Adam(lr=...)",
        "0.001",
    )
    assert setting["source"]["lineNumber"] == 3
    assert _declares_parameter(_line(tmp_path, setting), "lr")


def test_the_explanation_is_the_same_on_every_harvest(tmp_path: Path) -> None:
    assert _explanations(tmp_path / "a") == _explanations(tmp_path / "b")


def test_the_record_page_and_its_twin_show_what_the_code_says(
    tmp_path: Path, session: Session, client: TestClient
) -> None:
    release = drafts.resolve_release(str(_write(tmp_path / "src")), repo=REPO, ref=REF)
    result, _ = drafts.harvest_release(session, release)
    session.commit()
    draft = next(d for d in result.drafts if d.record["errorMessage"].startswith("The model"))
    record_id = draft.record["id"]
    document = client.get(f"/api/errors/{record_id}").json()
    explanation = document["explanation"]
    assert explanation["release"] == f"{REPO}@{REF}"
    assert [s["typedAs"] for s in explanation["settings"]] == [
        "--max-model-len",
        "--gpu-memory-utilization",
    ]
    assert explanation["settings"][0]["source"]["release"] == f"{REPO}@{REF}"
    assert explanation["changes"] == []
    assert "explanation" not in document["locations"][0]["codeContext"]
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    assert "explanation" in schema["RecordDocument"]["properties"]
    assert schema["ExplainedSetting"]["properties"]["typedAs"]["type"] == "string"
    page = client.get(f"/errors/{record_id}").text
    said, source = page.index("What the code says"), page.index('id="source"')
    assert said < source
    assert "<code>--gpu-memory-utilization</code>" in page[said:source]
    assert "<td><code>0.9</code></td>" in page[said:source]


def test_errkb_match_says_the_top_setting_in_one_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ERRKB_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    folder = str(_write(tmp_path / "src"))
    harvested = runner.invoke(app, ["harvest", folder, "--repo", REPO, "--ref", REF])
    assert harvested.exit_code == 0, harvested.output
    paste = "ValueError: the prompt is longer than the model allows"
    matched = runner.invoke(app, ["match", "-"], input=paste)
    assert matched.exit_code == 0, matched.output
    assert "what the code says: setting --max-model-len (default None)" in matched.output


def _location(version: str, gone: bool = False) -> Location:
    return Location(f"vllm=={version}", f"v{version}", "vllm/a.py", None if gone else 10, gone=gone)


def test_the_releases_that_brought_and_removed_a_site_are_told_with_their_source() -> None:
    harvested = ["vllm==0.1.0", "vllm==0.2.0", "vllm==0.3.0", "vllm==0.4.0"]
    known = [_location("0.2.0"), _location("0.3.0"), _location("0.4.0", gone=True)]
    explained = {"settings": [], "advice": [], "trigger": None, "source": {}}
    known[1] = replace(known[1], context={"explanation": explained})
    history = [History("vllm", ("0.2.0", "0.3.0"), "0.4.0", "in vllm 0.2.0–0.3.0; gone in 0.4.0")]
    explanation = record_explanation(known, history, harvested)
    assert explanation is not None
    assert [(c.text, c.source.release) for c in explanation.changes] == [
        (
            "first raised in vllm 0.2.0: 0.1.0, the release harvested before it, does not raise it",
            "vllm==0.2.0",
        ),
        ("gone in vllm 0.4.0: 0.3.0 raises it here, 0.4.0 no longer does", "vllm==0.4.0"),
    ]
    assert explanation.headline == (
        "first raised in vllm 0.2.0: 0.1.0, the release harvested before it, does not raise it"
    )


def test_a_guard_that_reads_differently_from_the_release_before_is_told() -> None:
    harvested = ["vllm==0.1.0", "vllm==0.2.0", "vllm==0.3.0"]
    guards = ["n > limit", "n  >  limit", "n >= limit"]  # spacing alone is no change
    full = [
        replace(_location(version), context={"guard": guard})
        for version, guard in zip(("0.1.0", "0.2.0", "0.3.0"), guards, strict=True)
    ]
    explained = {"settings": [], "advice": [], "trigger": None, "source": {}}
    full[-1] = replace(full[-1], context={"guard": guards[-1], "explanation": explained})
    known = [location.slim() for location in full[:-1]] + [full[-1]]
    history = [History("vllm", ("0.1.0", "0.2.0", "0.3.0"), None, "in vllm 0.1.0–0.3.0")]
    explanation = record_explanation(known, history, harvested)
    assert explanation is not None
    assert [(c.text, c.source.release) for c in explanation.changes] == [
        (
            "the guard changed in vllm 0.3.0 (since 0.2.0): `n  >  limit` became `n >= limit`",
            "vllm==0.3.0",
        )
    ]


def test_an_older_release_keeps_only_the_guard_of_its_context() -> None:
    location = replace(
        _location("0.1.0"),
        source_code="if n > limit:\n    raise ValueError",
        context={"guard": "n > limit", "callers": [{"filePath": "vllm/b.py"}]},
    )
    assert location.slim().context == {"guard": "n > limit"}
    assert location.slim().source_code is None
    assert replace(location, context={"callers": []}).slim().context is None


# What the real KV cache check needs: its module and the release's settings files.
KV_CHECK = "vllm/v1/core/kv_cache_planning.py"


@pytest.mark.network  # downloads vLLM 0.33.0 from the package index once
def test_the_real_kv_cache_check_names_its_real_flags(tmp_path: Path) -> None:
    from tests.helpers.releases import RELEASES

    root = RELEASES.ensure_unpacked("vllm", "0.33.0")
    for name in [KV_CHECK, "vllm/engine/arg_utils.py", "vllm/envs.py"] + [
        path.relative_to(root).as_posix() for path in (root / "vllm/config").glob("*.py")
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / name, tmp_path / name)
    result = harvest_tree(tmp_path, repo=REPO, ref="v0.33.0", analyzed_at="x", package_dir="vllm")
    kv = next(
        d.context["explanation"]
        for d in result.drafts
        if d.record["errorMessage"].startswith("To serve at least one request with the model")
    )
    settings = {s["typedAs"]: s for s in kv["settings"]}
    assert list(settings) == ["--max-model-len", "--gpu-memory-utilization"]
    assert settings["--gpu-memory-utilization"]["default"] == "0.92"
    assert settings["--gpu-memory-utilization"]["help"].startswith(
        "The fraction of GPU memory to be used for the model executor"
    )
    assert settings["--max-model-len"]["help"].startswith("Model context length")
    assert any(
        a["settings"] == ["--gpu-memory-utilization", "--max-model-len"] for a in kv["advice"]
    )
    _assert_defined(root, [s for d in result.drafts for s in d.context["explanation"]["settings"]])


def _assert_defined(root: Path, settings: list[dict]) -> None:
    """Every listed setting is defined at its source line by the release itself: a field
    of that name there, a flag its parser declares (or argparse derives from the field),
    an environment variable its envs module names or its code reads by name, a parameter
    its `def` declares."""
    assert settings
    engine_args = (root / "vllm/engine/arg_utils.py").read_text()
    declared = {
        node.args[0].value
        for node in ast.walk(ast.parse(engine_args))
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", None) == "add_argument"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }
    for setting in settings:
        source = setting["source"]
        line = (root / source["filePath"]).read_text().split("\n")[source["lineNumber"] - 1]
        if setting["kind"] == "env":
            assert f'"{setting["name"]}"' in line, setting
        elif setting["kind"] == "parameter":
            assert _declares_parameter(line, setting["name"]), setting
        else:
            assert line.strip().startswith(setting["name"] + ":"), setting
        if setting["kind"] == "flag":
            assert setting["typedAs"] in declared, setting
        if setting["kind"] == "config":
            assert setting["typedAs"].endswith("." + setting["name"]), setting


def _installed_torch(tmp_path: Path, *names: str) -> dict[str, dict]:
    """The explanations of the installed torch's own modules, harvested alone."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed")
    site = Path(spec.submodule_search_locations[0]).parent
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(site / name, tmp_path / name)
    result = harvest_tree(
        tmp_path, repo="pytorch/pytorch", ref="v2.13.0", analyzed_at="x", package_dir="torch"
    )
    return {d.record["errorMessage"]: d.context["explanation"] for d in result.drafts}


def _line(root: Path, setting: dict) -> str:
    source = setting["source"]
    return (root / source["filePath"]).read_text().split("\n")[source["lineNumber"] - 1]


def test_torch_names_the_variables_its_env_rendezvous_reads(tmp_path: Path) -> None:
    explained = _installed_torch(tmp_path, "torch/distributed/rendezvous.py")
    missing = next(e for m, e in explained.items() if "environment variable {" in m)
    assert _typed(missing) == ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]
    for setting in missing["settings"]:
        assert setting["kind"] == "env"
        assert f'"{setting["name"]}"' in _line(tmp_path, setting), setting
    # `_get_env_or_raise(env_var)` raises it: a private helper's parameter is no setting.
    assert not any(s["kind"] == "parameter" for s in missing["settings"])


def test_torch_follows_a_guard_local_to_the_parameter_it_comes_from(tmp_path: Path) -> None:
    explained = _installed_torch(tmp_path, "torch/optim/optimizer.py")
    empty = explained["optimizer got an empty parameter list"]
    (setting,) = empty["settings"]
    assert (setting["kind"], setting["typedAs"]) == ("parameter", "Optimizer(params=...)")
    assert _declares_parameter(_line(tmp_path, setting), "params"), setting


def _declares_parameter(line: str, name: str) -> bool:
    """Whether a line of a `def` declares this parameter (`params: ParamsT,`, `lr=1e-3`)."""
    return re.search(rf"(?<![\w.]){name}\s*(?:[:=,)]|$)", line) is not None


def test_a_record_no_location_explained_still_tells_the_releases_that_changed_it() -> None:
    harvested = ["vllm==0.1.0", "vllm==0.2.0", "vllm==0.3.0"]
    known = [_location("0.1.0").slim(), _location("0.2.0").slim(), _location("0.3.0", gone=True)]
    history = [History("vllm", ("0.1.0", "0.2.0"), "0.3.0", "in vllm 0.1.0–0.2.0; gone in 0.3.0")]
    explanation = record_explanation(known, history, harvested)
    assert explanation is not None
    assert (explanation.release, explanation.settings, explanation.advice) == (
        "vllm==0.2.0",
        [],
        [],
    )
    assert [c.text for c in explanation.changes] == [
        "gone in vllm 0.3.0: 0.2.0 raises it here, 0.3.0 no longer does"
    ]
    assert record_explanation(known[:2], [], harvested[:2]) is None


def test_an_older_release_keeps_the_explanation_of_a_site_no_newer_release_raises() -> None:
    explained = {"settings": [], "advice": [], "trigger": None, "source": {}}
    location = replace(_location("0.1.0"), context={"guard": "n > limit", "explanation": explained})
    assert location.slim().context == {"guard": "n > limit"}
    assert location.slim(newest=True).context == {
        "guard": "n > limit",
        "explanation": explained,
    }


def test_the_newest_location_of_a_compiled_literal_keeps_where_it_was_compiled_from() -> None:
    """torch 2.1's "The server socket has failed to listen on any local network address."
    is in its libtorch_cpu.so and in no newer release: the record's only place is that
    location's source file (socket.cpp), which an older location of a newer site drops."""
    compiled = {
        "library": "torch/lib/libtorch_cpu.so",
        "sourceFile": "torch/csrc/distributed/c10d/socket.cpp",
        "sourceLine": None,
    }
    location = replace(_location("2.1.2"), context=compiled)
    assert location.slim(newest=True).context == {
        "library": "torch/lib/libtorch_cpu.so",
        "sourceFile": "torch/csrc/distributed/c10d/socket.cpp",
    }
    assert location.slim().context is None
