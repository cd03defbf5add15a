"""What matching a paste returns: the exceptions found and the records that explain them.

The one result of app.matching.service.match_text, which the API answers as it is, the
pages render and the CLI prints.
"""

from pydantic import BaseModel, Field

from app.wire.base import ApiModel
from app.wire.records import RecordSummary


class FrameOut(ApiModel):
    """One frame of a parsed traceback."""

    file: str
    line: int
    function: str


class ExceptionOut(ApiModel):
    """One exception found in a paste; span is [start, end) in the pasted text."""

    index: int
    error_class: str
    qualified_class: str
    message: str
    frames: list[FrameOut]
    cause_index: int | None
    span: tuple[int, int]
    message_spans: list[tuple[int, int]] = Field(validation_alias="message_line_spans")
    # the library outside the harvested upstreams that raised it (pydantic, argparse,
    # huggingface_hub, NCCL, CUDA, the interpreter), when its frames or words say so
    raised_by: str | None = None


class ScoreComponent(ApiModel):
    """One part of a match's score: `id` names what agreed or differed (stable, for
    programs), `points` what it gave (negative when it differed), `hint` says it in words."""

    id: str
    points: float
    hint: str


class MatchOut(ApiModel):
    """A record that explains (part of) the paste, with its score and why: the score is the
    sum of its components' points; the reasons say the same in sentences."""

    id: str
    score: float
    exception_index: int | None
    captures: dict[str, str | None]
    reasons: list[str]
    components: list[ScoreComponent]
    record: RecordSummary
    # "in vllm 0.12.0–0.32.0; changed in 0.33.0"
    history: list[str] = []  # noqa: RUF012 - pydantic copies a default per instance
    # records raising the same message, as likely
    same_message: list[RecordSummary] = []  # noqa: RUF012 - as for history


class MatchResult(ApiModel):
    """POST /api/match: the exceptions found and the records that explain them, best first.
    `rankingVersion` names the weights and components the scores were computed with: scores
    of different versions are not comparable."""

    ranking_version: str
    exceptions: list[ExceptionOut]
    matches: list[MatchOut]
    truncated: bool = False  # a reply cap left out exceptions, frames, matches or characters


class BatchResult(BaseModel):
    """One result per pasted text, in the order they were sent."""

    results: list[MatchResult]
