"""Tests for app.exception_classes: exception classes of real vLLM releases and how a
pasted class relates to a record's across a rename."""

from pathlib import Path

import pytest

from app import exception_classes
from app.harvest.collect import extract_module
from tests.helpers.releases import RELEASES

pytestmark = pytest.mark.network  # downloads from the package index


def _bases(version: str) -> dict[str, tuple[str, ...]]:
    root = Path(RELEASES.ensure_unpacked("vllm", version))
    source = (root / "vllm" / "exceptions.py").read_text()
    return extract_module(source, "vllm/exceptions.py").bases


def test_only_exception_classes_are_kept() -> None:
    bases = {"Config": ("object",), "Mine": ("ValueError",), "Deeper": ("Mine",), "Loop": ("Loop",)}
    assert exception_classes.exception_classes(bases) == {
        "Mine": ("ValueError",),
        "Deeper": ("Mine",),
    }


def test_a_renamed_class_relates_across_releases(session) -> None:
    """vLLM 0.14.1 declares VLLMValidationError a ValueError; 0.33.0 a VLLMClientError."""
    exception_classes.replace_release(
        session, "vllm==0.14.1", exception_classes.exception_classes(_bases("0.14.1"))
    )
    exception_classes.replace_release(
        session, "vllm==0.33.0", exception_classes.exception_classes(_bases("0.33.0"))
    )
    graph = exception_classes.class_graph(session)
    assert graph["VLLMValidationError"] == {"ValueError", "VLLMClientError"}
    assert exception_classes.relation("ValueError", "VLLMValidationError", graph) == "superclass"
    assert exception_classes.relation("VLLMValidationError", "ValueError", graph) == "subclass"
    assert exception_classes.relation("VLLMValidationError", "VLLMError", graph) == "subclass"
    assert exception_classes.relation("TypeError", "VLLMValidationError", graph) is None
    assert exception_classes.relation("Exception", "VLLMValidationError", graph) is None  # a root


def test_builtins_relate_without_a_harvest() -> None:
    graph = exception_classes.BUILTIN_GRAPH
    assert exception_classes.relation("ModuleNotFoundError", "ImportError", graph) == "subclass"
    assert exception_classes.relation("KeyError", "IndexError", graph) is None


def test_torch_classes_of_compiled_code_relate_to_their_bases() -> None:
    """A CUDA error pasted from torch before 2.8 (RuntimeError) agrees in part with a record
    of today's class, which only the type stubs declare."""
    graph = exception_classes.class_graph_of(())
    assert exception_classes.relation("AcceleratorError", "RuntimeError", graph) == "subclass"
    assert exception_classes.relation("RuntimeError", "AcceleratorError", graph) == "superclass"
    assert exception_classes.relation("DistBackendError", "RuntimeError", graph) == "subclass"
