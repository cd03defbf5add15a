"""The advice fields a made record leaves null are schema fields, in the schema's order."""

from app.records.advice_fields import UNWRITTEN_ADVICE
from app.records.validation import field_order


def test_the_advice_fields_are_one_run_of_the_schema_fields() -> None:
    order = field_order()
    first = order.index(next(iter(UNWRITTEN_ADVICE)))
    assert order[first : first + len(UNWRITTEN_ADVICE)] == tuple(UNWRITTEN_ADVICE)
    assert set(UNWRITTEN_ADVICE.values()) == {None}
