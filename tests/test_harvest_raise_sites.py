"""What a statement makes a raise site of: the class, the message argument, the scope that
names it, asserts and torch checks, HTTP error responses, and why a raise has no message."""

import json
import re
from pathlib import Path
from textwrap import dedent

import pytest
from sqlmodel import select

from app.config import Settings
from app.harvest import SkipReason, extract_raises
from app.harvest import drafts as stored_drafts
from app.matching.matcher import Matcher
from app.matching.service import match_text
from app.store.tables import Record
from tests.helpers import real_pastes
from tests.helpers.harvest import only_site as _only
from tests.helpers.harvest import template_of as _template
from tests.helpers.harvest import write_source as _write


def test_vllm_validation_error_keywords_are_an_optional_suffix_of_the_pattern() -> None:
    site = _only(
        """
        if self.max_tokens < 1:
            raise VLLMValidationError(
                f"max_tokens must be at least 1, got {self.max_tokens}.",
                parameter="max_tokens",
                value=self.max_tokens,
            )
        """
    )
    assert site.message is not None
    pattern = re.compile(site.message.pattern)
    # str() of the error appends the keywords given, a None value left out; a server's
    # answer shows the message alone
    for message in (
        "max_tokens must be at least 1, got 0. (parameter=max_tokens, value=0)",
        "max_tokens must be at least 1, got -1. (parameter=max_tokens)",
        "max_tokens must be at least 1, got -344.",
    ):
        assert pattern.fullmatch(message), message
    assert not pattern.fullmatch("max_tokens must be at least 1, got 0. (other)")
    # the same when the class's own __init__ builds the message (as in vllm/exceptions.py)
    sites = extract_raises(
        dedent(
            """
            class VLLMValidationError(ValueError):
                def __init__(self, message, *, parameter=None, value=None):
                    super().__init__(message)

            def check(n):
                if n < 1:
                    raise VLLMValidationError(f"n must be at least 1, got {n}.", parameter="n")
            """
        )
    )
    (resolved,) = [site for site in sites if site.function == "check"]
    assert resolved.message is not None
    assert re.fullmatch(resolved.message.pattern, "n must be at least 1, got 0. (parameter=n)")


def test_first_argument_is_the_message() -> None:
    assert _template('raise ValueError("wrong shape", shape)') == "wrong shape"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("raise", SkipReason.RERAISE),
        ("raise e", SkipReason.RERAISE_VARIABLE),
        ("raise NotImplementedError", SkipReason.NO_MESSAGE),
        ("raise errors.Custom", SkipReason.NO_MESSAGE),
        ("raise ValueError()", SkipReason.NO_MESSAGE),
        ("raise KeyError(key)", SkipReason.DYNAMIC_MESSAGE),
        ("raise Custom(msg=f'bad {x}')", SkipReason.DYNAMIC_MESSAGE),
        ("raise ValueError(f'{x}: {y}')", SkipReason.NO_LITERAL_TEXT),
        ("raise ValueError('bad')", SkipReason.NO_LITERAL_TEXT),
        ("raise ERRORS[kind]('a known message')", SkipReason.DYNAMIC_CLASS),
    ],
)
def test_skip_reasons(source: str, reason: SkipReason) -> None:
    site = _only(source)
    assert (site.message, site.skip) == (None, reason)


def test_enclosing_class_function_and_qualified_name() -> None:
    sites = extract_raises(
        dedent(
            """
            raise ImportError("module level failure")
            class Pool:
                raise TypeError("class body failure")
                def free(self):
                    def inner():
                        raise RuntimeError("nested function failure")
                    raise RuntimeError("method failure")
            async def fetch():
                raise torch.OutOfMemoryError("coroutine failure")
            """
        )
    )
    found = [(s.qualname, s.function, s.class_name, s.error_class, s.line) for s in sites]
    assert found == [
        (None, None, None, "ImportError", 2),
        ("Pool", None, "Pool", "TypeError", 4),
        ("Pool.free.<locals>.inner", "inner", "Pool", "RuntimeError", 7),
        ("Pool.free", "free", "Pool", "RuntimeError", 8),
        ("fetch", "fetch", None, "torch.OutOfMemoryError", 10),  # the class as written
    ]


def test_asserts_and_torch_checks_are_raise_sites() -> None:
    sites = extract_raises(
        dedent(
            """
            def f(x, n):
                assert x is not None, f"x must be given for {n}"
                assert n > 0
                torch._check(n < 8, lambda: f"n too large: {n}")
                torch._check_index(n >= 0, lambda: "negative index")
                torch._check(n != 3)
            """
        )
    )
    found = [(s.kind, s.error_class, s.message and s.message.template, s.guard) for s in sites]
    assert found == [
        ("assert", "AssertionError", "x must be given for {n}", "x is None"),
        ("check", "RuntimeError", "n too large: {n}", "n >= 8"),
        ("check", "IndexError", "negative index", "n < 0"),
        ("assert", "AssertionError", None, "n <= 0"),  # no message: found by its line, last
    ]
    assert sites[-1].skip == SkipReason.BARE_ASSERT


SERVING = """
from http import HTTPStatus

class OpenAIServing:
    def create_error_response(self, message, err_type="BadRequestError", status_code=400):
        return create_error_response(message, err_type, status_code)

    async def _check_model(self, request):
        if request.model in self.served_model_names:
            return None
        return error_response or self.create_error_response(
            message=f"The model `{request.model}` does not exist.",
            err_type="NotFoundError",
            status_code=HTTPStatus.NOT_FOUND,
        )

    async def chat(self, request):
        if request.tool_choice == "auto" and not self.enable_auto_tools:
            return self.create_error_response(
                '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                "to be set"
            )
        try:
            return await self.generate(request)
        except ValueError as e:
            return self.create_error_response(str(e))
"""


def test_an_http_error_response_is_a_site_its_json_body_finds(
    session, settings: Settings, tmp_path: Path
) -> None:
    """vLLM's server answers a wrong model name or tool choice as a JSON error body built by
    `create_error_response(message, err_type=..., status_code=...)`, not as a raise; people
    paste that body (corpus cases vllm-119, vllm-120, vllm-039). Each call with a message is
    a site of the class it names (BadRequestError by default) and the status it answers; a
    call with a computed message (`str(e)`) has no text a body could be found by."""
    root = tmp_path / "src"
    _write(root / "vllm" / "__init__.py", "")
    _write(root / "vllm" / "serving_engine.py", SERVING)
    release = stored_drafts.resolve_release(str(root), repo="vllm-project/vllm", ref="v0.3.3")
    stored_drafts.harvest_release(session, release)
    session.commit()
    stored = session.exec(select(Record)).all()
    documents = [json.loads(r.document) for r in stored]
    assert sorted((d["errorClass"], d["httpStatus"], d["lineNumber"]) for d in documents) == [
        ("BadRequestError", 400, 19),
        ("NotFoundError", 404, 11),
    ]  # str(e) and the helper's own `message` parameter: no site
    matcher = Matcher(session.get_bind(), settings.cache_dir, 1 << 20)
    for name, line in (
        ("vllm-119-model-does-not-exist-json-404.json", 11),
        ("vllm-120-model-does-not-exist-openai-404.json", 11),
        ("vllm-039-auto-tool-choice-json-body.json", 19),
    ):
        top = match_text(matcher, session, real_pastes.case(name)["paste"]).matches[0]
        assert (top.record.file_path, top.record.line_number) == ("vllm/serving_engine.py", line)
