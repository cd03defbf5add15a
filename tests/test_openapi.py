"""Schemathesis against /openapi.json: generated requests for every operation,
with the admin token so writes run too; no 5xx, every status code answered is documented,
and every body conforms to its documented schema.

Each operation's cases come from Schemathesis's Hypothesis strategy and run under
Hypothesis directly (its pytest fixture integration does not work with pytest 9).
"""

from collections import Counter
from collections.abc import Callable

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.helpers.records import DATA_DIR

EXAMPLES_PER_OPERATION = 60
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def _checker(
    operation, mode: GenerationMode, count: Callable[[], None], headers: dict[str, str]
) -> Callable[[], None]:
    """A Hypothesis test of one operation: its generated cases, called and validated."""

    @given(case=operation.as_strategy(mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        derandomize=True,  # the same cases on every run: CI failures reproduce
        suppress_health_check=list(HealthCheck),
    )
    def check(case) -> None:
        count()
        case.call_and_validate(headers=dict(headers), checks=CHECKS)

    return check


def test_every_operation_conforms_to_its_documentation(make_client, auth) -> None:
    """Valid (positive) and invalid (negative) requests of each operation; `pytest -s`
    prints the number of cases for the README."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", make_client(DATA_DIR).app)
    cases: Counter[str] = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in GenerationMode:
            label = f"{operation.method.upper()} {operation.path} ({mode.value})"
            try:
                _checker(operation, mode, lambda label=label: cases.update([label]), auth)()
            except Unsatisfiable:  # nothing invalid to send: no parameters and no body
                assert mode is GenerationMode.NEGATIVE, label
                assert label not in cases, label
    print(f"\nSchemathesis: {sum(cases.values())} cases over {len(schema)} operations")
    positive = [label for label in cases if label.endswith("(positive)")]
    assert len(positive) == len(schema) >= 12
    assert len(cases) > len(positive)  # and invalid requests where there are any to make
