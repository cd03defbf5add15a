"""The interpreter's own errors answered by the statement at the innermost frame, read from
the release cache: the right release by the frame's source, the record readable by GET."""

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.harvest import drafts
from app.main import create_app
from app.matching.logtext import clean_lines
from app.matching.statements import StatementRecords, interpreter_error
from app.matching.tracebacks.parse import parse_exceptions
from app.records import service as records
from app.store.engine import open_store, unit_of_work
from app.store.tables import DatasetState
from app.upstreams.release_cache import Upstream

OLD = "vllm==0.6.3"
NEW = "vllm==0.7.3"
MODULE = "vllm/model_executor/models/qwen2.py"
OLD_SOURCE = [
    "def load_weights(self, weights):",
    "    params_dict = dict(self.named_parameters())",
    "    for name, loaded_weight in weights:",
    "        param = params_dict[name]",
    "        param.load(loaded_weight)",
]
NEW_SOURCE = [
    "def load_weights(self, weights):",
    "    return self.loader.load(weights)",
    "",
    "",
    "",
]
PASTE = """Traceback (most recent call last):
  File "/usr/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 12, in load_model
    self.model = get_model(self.model_config)
  File "/opt/vllm/model_executor/models/qwen2.py", line 4, in load_weights
    param = params_dict[name]
KeyError: 'layers.35.mlp.gate.g_idx'
"""


def _release_cache(cache_dir: Path) -> None:
    for release, source in ((OLD, OLD_SOURCE), (NEW, NEW_SOURCE)):
        name, _, version = release.partition("==")
        path = cache_dir / "unpacked" / f"{name}-{version}" / MODULE
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(source) + "\n")


def _exception(text: str):  # type: ignore[no-untyped-def]
    return parse_exceptions(text, clean_lines(text))[-1]


@pytest.mark.parametrize(
    ("line", "interpreter"),
    [
        ("KeyError: 'layers.35.mlp.gate.g_idx'", True),
        ("AttributeError: 'NoneType' object has no attribute 'cpu'", True),
        ("IndexError: list index out of range", True),
        ("TypeError: forward() got an unexpected keyword argument 'kv_caches'", True),
        ("ValueError: not enough values to unpack (expected 2, got 1)", True),
        ("ModuleNotFoundError: No module named 'flashinfer'", True),
        ("ImportError: cannot import name 'RegexGuide' from 'sglang.srt.constrained'", True),
        (
            "ImportError: libcuda.so.1: cannot open shared object file: No such file or directory",
            True,
        ),
        (
            "ImportError: /x/common_ops.abi3.so: undefined symbol: cuGreenCtxStreamCreate",
            True,
        ),
        ("ImportError: DLL load failed while importing cuda_utils: The module was not found", True),
        ("ImportError: Please install flashinfer to use this backend", False),
        ("ValueError: Unsupported model architecture Foo", False),
        ("RuntimeError: CUDA error: out of memory", False),
    ],
)
def test_the_interpreters_own_messages_are_told_from_a_projects(
    line: str, interpreter: bool
) -> None:
    assert interpreter_error(_exception(PASTE.replace(PASTE.splitlines()[-1], line))) is interpreter


def test_the_statement_is_read_from_the_release_whose_line_holds_the_frames_source(
    tmp_path: Path,
) -> None:
    _release_cache(tmp_path)
    statements = StatementRecords(Upstream(tmp_path).cached_root)
    stored = statements.record(_exception(PASTE), [OLD, NEW], {})
    assert stored is not None
    record = stored.record
    assert (record.error_class, record.file_path, record.line_number) == ("KeyError", MODULE, 4)
    assert record.repo == "vllm-project/vllm"
    assert "param = params_dict[name]" in (record.documentation or "")
    assert OLD in (record.trigger_scenarios or "")
    assert NEW not in (record.trigger_scenarios or "")
    assert "params_dict[name]" in (record.source_code or "")
    assert statements.get(stored.id) == stored
    # a raise is no statement of the interpreter, nor is a line no release holds
    raised = PASTE.replace("    param = params_dict[name]\n", "    raise KeyError(name)\n")
    assert statements.record(_exception(raised), [OLD, NEW], {}) is None
    assert statements.record(_exception(PASTE), [NEW], {}) is None


def test_a_statement_that_moved_in_the_harvested_releases_is_found_in_its_function(
    tmp_path: Path,
) -> None:
    """The paste's release is not harvested: its line 40 is line 4 of a harvested one, in
    the same function; a line of that text in another function is not it."""
    _release_cache(tmp_path)
    statements = StatementRecords(Upstream(tmp_path).cached_root)
    moved = PASTE.replace("line 4, in load_weights", "line 40, in load_weights")
    stored = statements.record(_exception(moved), [OLD, NEW], {})
    assert stored is not None
    assert stored.record.line_number == 4
    other = PASTE.replace("line 4, in load_weights", "line 40, in forward")
    assert statements.record(_exception(other), [OLD, NEW], {}) is None


def test_a_match_answers_the_statement_and_get_reads_it(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _release_cache(cache)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'errkb.db'}", cache_dir=cache, older_releases=[]
    )
    engine = open_store(settings)
    with unit_of_work(engine) as session:
        for release in (OLD, NEW):
            session.merge(DatasetState(key=f"harvested:{release}", value="2026-12-01T00:00:00"))
        records.bump_dataset_version(session)
    client = TestClient(create_app(settings))
    matches = client.post("/api/match", json={"text": PASTE}).json()["matches"]
    assert matches, "the statement answers"
    first = matches[0]
    assert first["record"]["errorClass"] == "KeyError"
    assert first["record"]["filePath"] == MODULE
    assert any(part["id"] == "site.statement" for part in first["components"])
    document = client.get(f"/api/errors/{first['id']}")
    assert document.status_code == 200, document.text
    assert document.json()["record"]["lineNumber"] == 4
    assert client.get(f"/errors/{first['id']}").status_code == 200


def test_without_the_release_cache_nothing_is_made_up(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client()
    assert client.post("/api/match", json={"text": PASTE}).json()["matches"] == []


ASSERTING = [*OLD_SOURCE[:4], "        assert param.shape == loaded_weight.shape", OLD_SOURCE[4]]
BARE_ASSERT = PASTE.replace(
    "line 4, in load_weights\n    param = params_dict[name]\nKeyError: 'layers.35.mlp.gate.g_idx'",
    "line 65, in load_weights\n    assert param.shape == loaded_weight.shape\nAssertionError",
)


def test_a_bare_assert_whose_line_moved_is_answered_by_the_harvested_assert(
    tmp_path: Path,
) -> None:
    """The paste's release is not harvested: its `assert` at line 65 is line 5 of the same
    function in a harvested release, whose harvested record of that assert answers it; the
    same text in another function is not it."""
    cache = tmp_path / "cache"
    root = cache / "unpacked" / "vllm-0.7.3"
    (root / MODULE).parent.mkdir(parents=True)
    (root / MODULE).write_text("\n".join(ASSERTING) + "\n")
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'errkb.db'}", cache_dir=cache, older_releases=[]
    )
    engine = open_store(settings)
    release = drafts.Release(NEW, root, "vllm", "vllm-project/vllm", "v0.7.3", "", NEW)
    with unit_of_work(engine) as session:
        drafts.harvest_release(session, release)
        session.merge(DatasetState(key=f"harvested:{NEW}", value="2026-12-01T00:00:00"))
        records.bump_dataset_version(session)
    client = TestClient(create_app(settings))
    matches = client.post("/api/match", json={"text": BARE_ASSERT}).json()["matches"]
    assert matches, "the moved assert answers"
    first = matches[0]["record"]
    assert (first["errorClass"], first["filePath"], first["lineNumber"]) == (
        "AssertionError",
        MODULE,
        5,
    )
    assert any(part["id"] == "site.raised-here-dynamic" for part in matches[0]["components"])
    elsewhere = BARE_ASSERT.replace("in load_weights", "in forward")
    assert client.post("/api/match", json={"text": elsewhere}).json()["matches"] == []


SGLANG = "sglang==0.4.9.post6"
KERNEL_INIT = [
    "import ctypes",
    "import os",
    "",
    "import torch",
    "",
    'if os.path.exists("/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.12"):',
    "    ctypes.CDLL(",
    '        "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.12",',
    "        mode=ctypes.RTLD_GLOBAL,",
    "    )",
    "",
    "",
    "from sgl_kernel import common_ops",
]
KERNEL_PASTE = """>>> import sgl_kernel
Traceback (most recent call last):
  File "<stdin>", line 1, in <module>
  File "/envs/x/lib/python3.10/site-packages/sgl_kernel/__init__.py", line 12, in <module>
    from sgl_kernel import common_ops
ImportError: libcuda.so.1: cannot open shared object file: No such file or directory
"""


def _sglang_with_kernels(cache_dir: Path, requirement: str) -> None:
    """An SGLang release that requires its kernels (`Requires-Dist` as its METADATA says),
    and that kernels release, both unpacked in the cache."""
    dist_info = cache_dir / "unpacked" / "sglang-0.4.9.post6" / "sglang-0.4.9.post6.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.4\nName: sglang\nVersion: 0.4.9.post6\n"
        f'Requires-Dist: {requirement}; extra == "srt"\n'
    )
    kernel = cache_dir / "unpacked" / "sgl-kernel-0.2.7" / "sgl_kernel" / "__init__.py"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("\n".join(KERNEL_INIT) + "\n")


def test_a_bundled_packages_import_line_is_read_from_the_release_its_project_requires(
    tmp_path: Path,
) -> None:
    """The dynamic loader's error at `from sgl_kernel import common_ops` (line 12 of the
    paste's kernels, line 13 of those SGLang 0.4.9.post6 requires, both the module's own
    code): the statement of the kernels' file, filed where SGLang's repository keeps it."""
    _sglang_with_kernels(tmp_path, "sgl-kernel==0.2.7")
    statements = StatementRecords(Upstream(tmp_path).cached_root)
    stored = statements.record(_exception(KERNEL_PASTE), [SGLANG], {})
    assert stored is not None
    record = stored.record
    assert (record.repo, record.error_class, record.file_path, record.line_number) == (
        "sgl-project/sglang",
        "ImportError",
        "sgl-kernel/python/sgl_kernel/__init__.py",
        13,
    )
    assert (record.github_url or "").startswith(
        "https://github.com/sgl-project/sglang/blob/v0.4.9.post6/sgl-kernel/python/"
    )
    # inside a function, the same line is another statement than the module's own
    nested = KERNEL_PASTE.replace("line 12, in <module>", "line 12, in load")
    assert statements.record(_exception(nested), [SGLANG], {}) is None


def test_a_bundled_package_no_release_pins_is_not_read(tmp_path: Path) -> None:
    _sglang_with_kernels(tmp_path, "sgl-kernel>=0.2.7")
    statements = StatementRecords(Upstream(tmp_path).cached_root)
    assert statements.record(_exception(KERNEL_PASTE), [SGLANG], {}) is None
