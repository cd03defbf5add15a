"""torch.compile's graph breaks read as raise sites: the type and the explanation Dynamo's
`unimplemented(...)` call formats, also where the explanation is a local of the function
around a closure, as torch/_dynamo/symbolic_convert.py builds it."""

import re
from textwrap import dedent

from app.harvest import extract_raises

SOURCE = """
from torch._dynamo.exc import unimplemented

def exception_handler(self, raised):
    explanation = (
        "Dynamo found no exception handler at the top-level compiled function "
        "when encountering an exception."
    )

    def bubble():
        unimplemented(
            gb_type="Observed exception",
            context=str(raised),
            explanation=explanation,
            hints=["Check the code in eager."],
        )

    bubble()

def call_method(self, name):
    unimplemented(
        gb_type="Unsupported method call",
        context=f"call_method {self} {name}",
        explanation=f"Dynamo does not know how to trace method `{name}` of class `{self}`",
        hints=[],
    )

def other(fn):
    unimplemented(fn)
"""
# As torch 2.13 prints it under `torch._dynamo.exc.Unsupported: `.
PASTED = (
    "Observed exception\n"
    "  Explanation: Dynamo found no exception handler at the top-level compiled function when "
    "encountering an exception.\n"
    "  Hint: Check the code in eager.\n"
    "\n"
    "  Developer debug context: raised exception ExceptionVariable(<class 'TypeError'>)"
)


def test_each_graph_break_is_a_site_of_unsupported_with_its_type_and_explanation() -> None:
    sites = extract_raises(dedent(SOURCE))
    found = [
        (site.line, site.error_class, site.message and site.message.template) for site in sites
    ]
    assert found == [
        (
            11,
            "Unsupported",
            "Observed exception\n  Explanation: Dynamo found no exception handler at the "
            "top-level compiled function when encountering an exception.\n{hints}",
        ),
        (
            21,
            "Unsupported",
            "Unsupported method call\n  Explanation: Dynamo does not know how to trace method "
            "`{name}` of class `{self}`\n{hints}",
        ),
    ]
    pattern = sites[0].message.pattern  # type: ignore[union-attr]
    assert re.fullmatch(pattern, PASTED)
