"""The `network` marker stays true: a test that downloads from the package index (real
vLLM, SGLang or older releases, through the shared release cache or a reproducer) carries
`@pytest.mark.network`, or its module `pytestmark = pytest.mark.network` when its fixtures or
imports download, so `pytest -m "not network"` runs offline."""

import ast
import re
from pathlib import Path

TESTS = Path(__file__).parent

# What in a test module's source downloads a release, and why.
NETWORK_SIGNALS = {
    r"^from tests\.helpers\.releases import|^from tests\.helpers import .*\breleases\b": (
        "the shared cache of real upstream releases"
    ),
    r"^from tests\.helpers\.accuracy import|^from tests\.helpers import .*\baccuracy\b": (
        "the real errors of harvested releases"
    ),
    r"^from tests\.helpers\.harvested import": "vLLM 0.33.0's real files",
    r"\blive_(reproducer|sglang_cancel)_traceback\b": "a reproducer's traceback run now",
    # A made-up `demo` project is one the test wrote into its own cache: nothing to download.
    r"\.(ensure_unpacked|load_module)\((?!\s*[\"']demo)": "a release unpacked or imported",
    r"\b(run_reproducer|runner\.verify|check_drift)\(": "a reproducer run or a drift check",
    r"resolve_release\(\s*\"[^\"]+==": "a release resolved by NAME==VERSION",
    r"\"older_releases\":\s*\[[^\]]*==": "older releases harvested on start",
    r"PROJECT_ROOT / \"reproducers\"": "the reproducer scripts run for real",
}


def _marked_network(source: str) -> bool:
    """Whether the module assigns a `pytestmark` that includes pytest.mark.network."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "pytestmark" for target in node.targets
        ):
            return "pytest.mark.network" in ast.unparse(node.value)
    return False


def _signals(source: str) -> list[str]:
    return [why for signal, why in NETWORK_SIGNALS.items() if re.search(signal, source, re.M)]


def _outside_marked_tests(source: str) -> str:
    """The source less the tests that carry `@pytest.mark.network` themselves."""
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and any(
            "pytest.mark.network" in ast.unparse(decorator) for decorator in node.decorator_list
        ):
            start = min(d.lineno for d in node.decorator_list) - 1
            lines[start : node.end_lineno] = [""] * (node.end_lineno - start)
    return "\n".join(lines)


def test_every_module_that_downloads_is_marked_network() -> None:
    unmarked = {
        path.name: why
        for path in sorted(TESTS.glob("test_*.py"))
        if path.name != Path(__file__).name  # its signals are examples
        and (why := _signals(_outside_marked_tests(path.read_text())))
        and not _marked_network(path.read_text())
    }
    assert not unmarked, f"mark these tests (or their module) network: {unmarked}"


def test_the_check_sees_a_download_and_a_marker() -> None:
    downloading = "from tests.helpers.releases import RELEASES\n"
    assert _signals(downloading)
    assert not _marked_network(downloading)
    assert _marked_network(downloading + "import pytest\npytestmark = pytest.mark.network\n")
    listed = "pytestmark = [pytest.mark.network, pytest.mark.browser]\n"
    assert _marked_network(listed)
    one_test = '@pytest.mark.network\ndef test_x():\n    RELEASES.ensure_unpacked("vllm", "0.1")\n'
    assert _signals(one_test)
    assert not _signals(_outside_marked_tests(one_test))
    assert _signals(_outside_marked_tests(one_test.replace("@pytest.mark.network\n", "")))
    assert not _signals("from tests.helpers.postgres import POSTGRESQL\n")
    assert not _signals('root = Upstream(tmp_path).ensure_unpacked("demo", "1.0")\n')
    assert _signals('root = Upstream(tmp_path).ensure_unpacked(name, "1.0")\n')


def _imported_modules(source: str) -> set[str]:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
    return imported


def test_tests_share_code_only_through_helpers() -> None:
    """A test module imports neither another test module (nor conftest) nor bench/: what
    several of them share lives in tests/helpers/, so each module can run on its own."""
    offending = {
        path.relative_to(TESTS.parent).as_posix(): sorted(
            module
            for module in _imported_modules(path.read_text())
            if module.split(".")[0] == "bench"
            or (module.startswith("tests.") and not module.startswith("tests.helpers"))
        )
        for path in sorted([*TESTS.glob("*.py"), *(TESTS / "helpers").glob("*.py")])
    }
    assert {path: found for path, found in offending.items() if found} == {}
