"""Schemathesis against /openapi.json: generated requests for every operation,
with the admin token so writes run too; no 5xx, every status code answered is documented,
every body conforms to its documented schema, and the document is as strict as the server:
a request it calls valid is not refused (a NUL in a string, a missing body), but where JSON
Schema cannot say what the server checks (_checks).

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
    positive_data_acceptance,
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
RECORD_WRITES = {("POST", "/api/errors"), ("PUT", "/api/errors/{record_id}")}
"""A record's validity goes past its JSON Schema (app/records/validation.py: a pattern's RE2
cost and literal text, a line within its source excerpt, an integer written as 12 and not
12.0, which JSON Schema counts as an integer): a schema-valid record may be a 422."""


def _checks(case) -> list:
    """The checks of one case: whether a schema-valid one must be accepted, but for record
    writes (RECORD_WRITES) and cursors, which are opaque: of the shape OpenAPI gives, only
    one the server made is valid (a 400 otherwise)."""
    opaque = "cursor" in (case.query or {})
    written = (case.method.upper(), case.path) in RECORD_WRITES
    return CHECKS if opaque or written else [*CHECKS, positive_data_acceptance]


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
        case.call_and_validate(headers=dict(headers), checks=_checks(case))

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
