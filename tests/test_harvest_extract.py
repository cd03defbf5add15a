"""The whole extraction: a release tree (prefix, tags, skipped folders and unparsable
files), a release's compiled libraries installed and of its CUDA build, then the whole of the
installed torch package.

The torch tests run the harvester on the real sources and then trigger real torch errors on
the CPU: the message a user sees must be matched by the draft at the raising frame's line.
"""

import re
import shutil
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import jsonschema
import pytest
import re2

from app.harvest import Draft, HarvestResult, SkipReason, harvest_tree
from app.harvest.extract import IN_A_HEADER, IN_ANOTHER_LIBRARY
from app.patterns import PatternError, check_pattern
from app.records.site_keys import matched_by_location
from app.upstreams.elf import rodata_sections, write_rodata
from tests.helpers.harvest import ANALYZED_AT, SCHEMA
from tests.helpers.harvest import write_source as _write
from tests.helpers.libraries import DEVICE_CHECK, build_library

TORCH_REF = "v2.13.0"


RECORD_KEYS = [
    "id", "repo", "slug", "errorCode", "errorMessage", "messagePattern", "errorType",
    "errorClass", "httpStatus", "severity", "filePath", "lineNumber", "sourceCode",
    "sourceCodeStart", "sourceCodeEnd", "githubUrl", "documentation", "triggerScenarios",
    "commonSituations", "solutions", "exampleFix", "handlingStrategy", "validationCode",
    "typeGuard", "tryCatchPattern", "preventionTips", "tags", "backgroundTag", "analyzedSha",
    "analyzedAt", "schemaVersion",
]  # fmt: skip


PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _harvest_torch(site_packages: Path, package_dir: str = "torch") -> HarvestResult:
    return harvest_tree(
        site_packages,
        repo="pytorch/pytorch",
        ref=TORCH_REF,
        analyzed_at=ANALYZED_AT,
        package_dir=package_dir,
    )


def _seed_slug(message: str) -> str:
    """The rule the seeds' slugs follow."""
    return re.sub(r"[^a-z0-9]+", "-", message[:50].lower()).strip("-")


def _render(template: str, names: tuple[str, ...], values: dict[str, str]) -> str:
    """Substitute the placeholders, in order, leaving other braces of the text alone."""
    pending = list(names)

    def substitute(match: re.Match[str]) -> str:
        if pending and match[1] == pending[0]:
            return values[pending.pop(0)]
        return match[0]

    rendered = PLACEHOLDER.sub(substitute, template)
    assert not pending, template
    return rendered


# A CUDA build's unit: the caching allocator's message, and two the CPU build has too.
CUDA_UNIT = r"""
const char* file_of_unit(void) { return "/__w/pytorch/pytorch/c10/cuda/CUDACachingAllocator.cpp"; }
const char* oom(void) { return "CUDA out of memory. Tried to allocate more than 1EB memory."; }
const char* head(void) { return "Expected all tensors to be on the same device, but got "; }
const char* middle(void) { return ", different from other tensors on "; }
const char* tail(void) { return " (when checking argument in method "; }
const char* other(void) { return "No available kernel.  Aborting execution."; }
"""


def test_a_message_of_the_installed_and_the_cuda_build_is_drafted_once(tmp_path: Path) -> None:
    """The installed build's libraries are read first, then the CUDA build's read-only data
    the release cache kept: a message both give is drafted once, under the first library; a
    header's check stays the header's, whichever library repeats it."""
    cpu = build_library(tmp_path)
    cuda = build_library(tmp_path, CUDA_UNIT, "libc10_cuda.so")
    installed = tmp_path / "site-packages"
    _write(installed / "torch" / "__init__.py", "")
    (installed / "torch" / "lib").mkdir()
    shutil.copy(cpu, installed / "torch" / "lib" / "libc10.so")
    _write(
        installed / "torch" / "include" / "c10" / "core" / "Kernel.h",
        'void pick() {\n  AT_ERROR("No available kernel.  Aborting execution.");\n}\n',
    )
    build = tmp_path / "libraries" / "torch-2.13.0"
    (build / "torch" / "lib").mkdir(parents=True)
    for library, name in ((cpu, "libc10.so"), (cuda, "libc10_cuda.so")):
        write_rodata(rodata_sections(library), build / "torch" / "lib" / f"{name}.rodata")

    result = harvest_tree(
        installed,
        repo="pytorch/pytorch",
        ref=TORCH_REF,
        analyzed_at=ANALYZED_AT,
        package_dir="torch",
        native_root=installed,
        build_root=build,
    )

    files: dict[str, list[str]] = {}
    for draft in result.drafts:
        files.setdefault(draft.record["errorMessage"], []).append(draft.record["filePath"])
    assert files[DEVICE_CHECK] == ["torch/lib/libc10.so"]
    assert files["No available kernel.  Aborting execution."] == ["c10/core/Kernel.h"]
    assert files["CUDA out of memory. Tried to allocate more than 1EB memory."] == [
        "torch/lib/libc10_cuda.so"
    ]
    assert result.library_sites == 3  # the device check, the assert, the allocator's
    assert result.skipped[IN_ANOTHER_LIBRARY] == 3  # libc10's two again, the device check
    assert result.skipped[IN_A_HEADER] == 3  # in each of the three libraries


def test_tree_prefix_tags_skipped_dirs_and_unparsable_files(tmp_path: Path) -> None:
    module = "sglang/srt/distributed/kv_transfer/v1/pool.py"
    _write(
        tmp_path / module,
        """
        class Pool:
            def free(self, n):
                if n < 0:
                    raise RuntimeError(f"Attempted to free {n} buffers")
                if n > 9:
                    raise RuntimeError(f"Attempted to free {n} buffers")
        """,
    )
    _write(tmp_path / "sglang/srt/broken.py", "def broken(:\n")
    _write(tmp_path / "sglang/srt/latin.py", "# -*- coding: ascii -*-\nx = 'é'\n")
    _write(tmp_path / "sglang/tests/test_pool.py", "raise ValueError('test only error')\n")
    _write(tmp_path / "sglang/benchmarks/bench.py", "raise ValueError('bench only error')\n")
    _write(tmp_path / "other/outside.py", "raise ValueError('outside the package')\n")
    progress: list[tuple[int, int, str]] = []

    result = harvest_tree(
        tmp_path,
        repo="sgl-project/sglang",
        ref="0132848349585cfe6aae51c4941cbae872505f8a",
        path_prefix="python/",
        analyzed_at=ANALYZED_AT,
        package_dir="sglang",
        progress=lambda *args: progress.append(args),
    )

    assert (result.files, result.raise_sites) == (1, 2)
    assert result.skipped == {SkipReason.UNPARSABLE_FILE: 2}
    assert [total for _, total, _ in progress] == [3, 3, 3]
    assert progress[-1][0] == 3
    first, second = (draft.record for draft in result.drafts)
    assert first["filePath"] == "python/" + module
    assert first["tags"] == ["distributed", "kv-transfer"]
    assert first["githubUrl"] == (
        "https://github.com/sgl-project/sglang/blob/0132848349585cfe6aae51c4941cbae872505f8a/"
        "python/sglang/srt/distributed/kv_transfer/v1/pool.py#L1-L7"
    )
    assert (first["sourceCodeStart"], first["sourceCodeEnd"]) == (1, 7)
    assert first["slug"] == "attempted-to-free-n-buffers"
    assert first["id"] != second["id"]  # same template twice in a function: occurrence order
    assert result.drafts[0].function == "free"
    assert result.drafts[0].class_name == "Pool"


@pytest.fixture(scope="module")
def torch_site() -> Path:
    """site-packages of the installed torch (the `reproducers` extra); its tests skip without."""
    torch = pytest.importorskip("torch")
    return Path(torch.__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def torch_result(torch_site: Path) -> HarvestResult:
    """One harvest of all of torch's Python sources, shared by the tests below."""
    return _harvest_torch(torch_site)


@pytest.fixture(scope="module")
def torch_drafts_at(torch_result: HarvestResult) -> dict[tuple[str, int], list[Draft]]:
    """The drafts by (filePath, lineNumber): what a traceback frame gives."""
    index: dict[tuple[str, int], list[Draft]] = {}
    for draft in torch_result.drafts:
        key = (draft.record["filePath"], draft.record["lineNumber"])
        index.setdefault(key, []).append(draft)
    return index


def test_torch_yields_thousands_of_schema_valid_drafts(torch_result: HarvestResult) -> None:
    drafts = torch_result.drafts
    assert torch_result.files > 2000
    assert len(drafts) > 10_000
    raise_skips = sum(torch_result.skipped.values()) - torch_result.skipped.get(
        SkipReason.UNPARSABLE_FILE, 0
    )
    drafted = {id(draft.site) for draft in drafts}  # a join of pieces drafts each piece
    assert torch_result.raise_sites + torch_result.log_sites == len(drafted) + raise_skips
    logged = {id(d.site) for d in drafts if d.record["errorType"] in ("log", "warning")}
    assert len(logged) == torch_result.log_sites > 1000  # torch warns a lot: warnings.warn
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for draft in drafts:
        record = draft.record
        assert list(record) == RECORD_KEYS
        validator.validate(record)
        assert record["filePath"].startswith("torch/")
        assert not {"test", "tests", "benchmarks"} & set(record["filePath"].split("/"))
        assert record["slug"] == _seed_slug(record["errorMessage"])
        start, end = record["sourceCodeStart"], record["sourceCodeEnd"]
        assert start <= record["lineNumber"] <= end
        assert record["sourceCode"].count("\n") == end - start
        statement = {
            "raise": "raise",
            "assert": "assert",
            "check": "torch._check",
            "call": "(",
            "log": "log",  # the logger's name says so: `logger.warning(`, `log.error(`
            "warning": "warn(",
        }[draft.site.kind]
        line = record["sourceCode"].split("\n")[record["lineNumber"] - start]
        assert (
            statement in line.lower()
            # a `@deprecated("...")` decorator warns at each call of what it decorates
            or (draft.site.kind == "warning" and line.lstrip().startswith("@deprecated("))
            # a graph break is Dynamo's call that raises Unsupported
            or (draft.site.kind == "check" and "unimplemented(" in line)
        )


def test_torch_ids_are_unique(torch_result: HarvestResult) -> None:
    ids = [draft.record["id"] for draft in torch_result.drafts]
    assert len(set(ids)) == len(ids)


def test_torch_patterns_compile_in_re2_and_fullmatch_their_template(
    torch_result: HarvestResult,
) -> None:
    for draft in torch_result.drafts:
        record = draft.record
        placeholders = tuple(re.compile(record["messagePattern"]).groupindex)
        assert re2.compile(record["messagePattern"]).groups == len(placeholders)
        values = {name: f"<{name} value {i}>" for i, name in enumerate(placeholders)}
        message = _render(record["errorMessage"], placeholders, values)
        for engine in (re, re2):
            assert engine.fullmatch(record["messagePattern"], message), record


def test_torch_patterns_pass_the_pattern_limits(torch_result: HarvestResult) -> None:
    """Program size, groups, empty and catch-all matches, \\C: none of torch's patterns is
    refused (bench/bench_hostile.py --sections patterns checks vLLM and SGLang too)."""
    refused = {}
    for draft in torch_result.drafts:
        if draft.located:  # found by its raise site, never by this one-part pattern
            assert matched_by_location(draft.record["messagePattern"]), draft.record
            continue
        try:
            check_pattern(draft.record["messagePattern"])
        except PatternError as error:
            refused[draft.record["id"]] = str(error)
    assert refused == {}


def test_torch_ids_are_deterministic_across_runs(
    torch_site: Path, torch_result: HarvestResult
) -> None:
    """A second run, scoped to one subpackage, gives the very same records."""
    again = _harvest_torch(torch_site, "torch/optim").drafts
    assert len(again) > 50
    first = {d.record["id"]: d.record for d in torch_result.drafts}
    assert all(first[d.record["id"]] == d.record for d in again)


def test_torch_id_survives_lines_inserted_above_a_raise(
    tmp_path: Path, torch_site: Path, torch_result: HarvestResult
) -> None:
    module = "torch/optim/sgd.py"
    lines = (torch_site / module).read_text().split("\n")
    inserted, at = 7, 60  # between the raises of SGD.__init__
    moved = tmp_path / module
    moved.parent.mkdir(parents=True)
    moved.write_text("\n".join(lines[:at] + [""] * inserted + lines[at:]))

    again = _harvest_torch(tmp_path).drafts
    before = {
        d.record["id"]: d.record for d in torch_result.drafts if d.record["filePath"] == module
    }
    after = {d.record["id"]: d.record for d in again}
    assert after.keys() == before.keys()
    assert len(before) >= 5
    shifts = {after[i]["lineNumber"] - before[i]["lineNumber"] for i in before}
    assert shifts == {0, inserted}  # raises above line 60 stay, the others move down


def _sgd(torch: ModuleType, **options: object) -> object:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], **options)


REAL_ERRORS: dict[str, Callable[[ModuleType], object]] = {
    "sgd-learning-rate": lambda torch: _sgd(torch, lr=-1),  # f-string
    "adam-beta": lambda torch: torch.optim.Adam(
        [torch.nn.Parameter(torch.zeros(2))], betas=(1.5, 0.9)
    ),  # f-string with a subscript
    "dropout-probability": lambda torch: torch.nn.Dropout(p=2),
    "conv-padding-mode": lambda torch: torch.nn.Conv2d(3, 3, 3, padding_mode="foo"),
    "conv-groups": lambda torch: torch.nn.Conv2d(4, 4, 3, groups=3),  # literal
    "get-submodule": lambda torch: torch.nn.Module().get_submodule("nope"),  # concatenation
    "sequential-index": lambda torch: torch.nn.Sequential()[5],
    "unflatten-size": lambda torch: torch.nn.Unflatten(1, [2, 2.5]),
    "cosine-restarts": lambda torch: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        _sgd(torch, lr=0.1), T_0=0
    ),
    "module-dict-value": lambda torch: torch.nn.ModuleDict({"a": 1}),
}


@pytest.mark.parametrize("trigger", REAL_ERRORS.values(), ids=REAL_ERRORS.keys())
def test_real_torch_error_matches_the_draft_at_its_raise(
    trigger: Callable[[ModuleType], object],
    torch_site: Path,
    torch_drafts_at: dict[tuple[str, int], list[Draft]],
) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception) as caught:  # noqa: PT011 - whatever torch raises
        trigger(torch)
    frame = traceback.extract_tb(caught.value.__traceback__)[-1]
    file_path = Path(frame.filename).resolve().relative_to(torch_site).as_posix()
    drafts = torch_drafts_at[(file_path, frame.lineno)]
    message = str(caught.value)
    assert any(
        re2.fullmatch(d.record["messagePattern"], message)
        and d.record["errorClass"].rpartition(".")[2] == type(caught.value).__name__
        for d in drafts
    ), (message, [d.record["messagePattern"] for d in drafts])
