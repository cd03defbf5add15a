"""What the code says about a record (GET /api/errors/{id}'s `explanation`): the settings
that reach its raise site, upstream's advice, the trigger, entry points and the releases
that changed it, each with where it was read (app.records.explanation reads them)."""

from pydantic import computed_field

from app.wire.base import ApiModel


class ExplanationSource(ApiModel):
    """Where a statement was read: the release, its file and line."""

    release: str | None
    ref: str
    file_path: str
    line_number: int | None
    github_url: str | None


class ExplainedSetting(ApiModel):
    """A setting that reaches the raise site, as its users type it."""

    name: str  # the attribute the code reads: max_model_len
    kind: str  # flag | argument (of EngineArgs, no flag) | config | env | parameter
    typed_as: str  # --max-model-len, ModelConfig.max_model_len, VLLM_PORT
    default: str | None  # as the release spells it
    help: str | None
    via: str  # where the raise site names it: guard or message
    source: ExplanationSource


class Advice(ApiModel):
    """A sentence of the message that tells the reader what to do."""

    text: str
    settings: list[str]  # the settings it names, as typed (see `settings`)
    url: str | None


class Statement(ApiModel):
    """One sentence about the record and where it was read."""

    text: str
    source: ExplanationSource


class EntryPoint(ApiModel):
    """A public call that leads to the raise site, found by name in the callers graph."""

    label: str  # as its users spell it: LLM(...), vllm serve, SamplingParams(...)
    calls: list[str]  # the functions from the entry point down to the raising one
    source: ExplanationSource  # where the chain leaves the entry point


class Explanation(ApiModel):
    """The settings, advice, trigger, entry points and release changes of a record, each
    sourced."""

    release: str
    settings: list[ExplainedSetting]
    advice: list[Advice]
    trigger: Statement | None
    changes: list[Statement]
    entry_points: list[EntryPoint]

    @property
    def says_something(self) -> bool:
        """Whether it names a setting, gives advice or tells a release that changed it."""
        return bool(self.settings or self.advice or self.changes)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def headline(self) -> str | None:
        """One line for a terminal: the first setting, else the first advice or change."""
        if self.settings:
            top = self.settings[0]
            default = f" (default {top.default})" if top.default is not None else ""
            return f"setting {top.typed_as}{default}"
        if self.advice:
            return f"advice: {self.advice[0].text}"
        return self.changes[0].text if self.changes else None
