"""Which library outside the upstreams raised an exception: its innermost frame's package,
else its own words; nothing when an upstream's frame is innermost."""

import pytest

from app.matching.libraries import raised_by
from app.matching.logtext import clean_lines
from app.matching.tracebacks.parse import parse_exceptions

VLLM_FRAME = '  File "/x/site-packages/vllm/entrypoints/openai/protocol.py", line 9, in parse\n'
PYDANTIC_FRAME = '  File "/x/site-packages/pydantic/main.py", line 212, in __init__\n'


def _raised_by(text: str) -> str | None:
    return raised_by(parse_exceptions(text, clean_lines(text))[-1])


@pytest.mark.parametrize(
    ("text", "library"),
    [
        (
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for "
            "ChatCompletionRequest\n",
            "pydantic",
        ),
        ("Traceback (most recent call last):\n" + PYDANTIC_FRAME + "ValueError: bad\n", "pydantic"),
        (
            "launch_server.py: error: unrecognized arguments: --enable-reasoning\n",
            "argparse",
        ),
        ("RuntimeError: NCCL error in: ../c.cpp:1, ncclUnhandledCudaError: Call to CUDA\n", "NCCL"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered\n", "CUDA"),
        ("TypeError: LLM.__init__() got an unexpected keyword argument 'foo'\n", "the interpreter"),
        ("ValueError: Unsupported model architecture Foo\n", None),
        # an upstream's innermost frame raised it: its own site answers, whatever the words
        (
            "Traceback (most recent call last):\n"
            + VLLM_FRAME
            + "RuntimeError: CUDA error: no kernel image is available\n",
            None,
        ),
    ],
)
def test_the_library_that_raised_is_read_from_frames_or_words(
    text: str, library: str | None
) -> None:
    assert _raised_by(text) == library
