"""`pytest -p errkb`: each failing test's report gets an "errkb" section when a record
explains its exception.

Registered as the pytest11 entry point `errkb`, which pytest loads into every run where errkb
is installed; so it does nothing unless asked: `-p errkb` on the command line or in addopts,
or `--errkb` (`-p app.client.pytest_plugin` where errkb is not installed: where it is, pytest
would register the one module under two names and refuse). Asked, it sends each failing test's
traceback to the server (ERRKB_SERVER) or the local store, waiting at most
ERRKB_HOOK_TIMEOUT_S; after one failure to get an answer it stops asking, so a test run never
waits on errkb more than once. Nothing beyond pytest is imported until a test fails.
"""

import traceback
from collections.abc import Generator

import pytest

NAMES = ("errkb", __name__)
"""What `-p` may name this plugin by: its entry point, or its module."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--errkb`, for a run where the plugin is loaded by its entry point already."""
    parser.getgroup("errkb").addoption(
        "--errkb",
        action="store_true",
        default=False,
        help="Add errkb's explanation to each failing test's report (same as -p errkb).",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Turn the explanations on only when the run asks for them."""
    asked = config.getoption("errkb") or any(
        name in NAMES for name in config.getoption("plugins") or []
    )
    if asked:
        config.pluginmanager.register(FailureExplainer(), "errkb-explainer")


class FailureExplainer:
    """Adds the section to failing reports; gives up for the run after one unanswered ask."""

    def __init__(self) -> None:
        self.answering = True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not (self.answering and report.failed and call.excinfo is not None):
            return report
        from app.client.explain import as_text, explain_quietly

        error = call.excinfo.value
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        found = explain_quietly(text)
        if found is None:
            self.answering = False
        elif found:
            report.sections.append(("errkb", "".join(as_text(item) for item in found)))
        return report
