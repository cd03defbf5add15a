"""torch.compile's graph breaks: the calls that stop Dynamo's tracing with a message of parts.

Dynamo calls `unimplemented(gb_type=..., context=..., explanation=..., hints=[...])` (named
`unimplemented_v2` in torch 2.7-2.8) at each of its 400-odd graph breaks; it raises
`Unsupported` with `format_graph_break_message`'s text (torch/_dynamo/exc.py): the type, then
`  Explanation: ` and the explanation, then a `  Hint: ` line per hint and the developer's
context, which people paste as it is (`torch._dynamo.exc.Unsupported: Observed exception`,
then `  Explanation: Dynamo found no exception handler ...`). The type and the explanation
name the site; the hints and the context that follow vary and are one value.
"""

import ast

from app.harvest.message_pieces import Env, Field, Parts
from app.harvest.messages import parts_of
from app.harvest.raise_sites import callee_name

GRAPH_BREAK_CLASS = "Unsupported"
_CALLEES = frozenset({"unimplemented", "unimplemented_v2"})


def graph_break_parts(call: ast.Call, env: Env) -> Parts | None:
    """The message parts of a graph break's call; None for any other call, and for one
    whose type or explanation is not known here."""
    if callee_name(call) not in _CALLEES:
        return None
    given = {keyword.arg: keyword.value for keyword in call.keywords}
    if "gb_type" not in given or "explanation" not in given:
        return None
    kind, explanation = parts_of(given["gb_type"], env), parts_of(given["explanation"], env)
    if not kind or not explanation:
        return None
    return (*kind, "\n  Explanation: ", *explanation, "\n", Field("hints"))
