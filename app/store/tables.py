"""SQLModel tables of the store. Change them only together with a migration."""

from datetime import date, datetime

from sqlalchemy import BigInteger, Boolean, Column, ForeignKey, Index, Integer, Table, Text, inspect
from sqlmodel import Field, SQLModel

from app.records.model import ID_LENGTH


class Record(SQLModel, table=True):
    """One error record: the document exactly as written, plus the columns that filter it.

    `document` keeps the record's JSON text as imported (key order, list order, nulls), so
    the API returns exactly what came in; the other columns are derived from it on write.
    """

    __tablename__ = "records"
    __table_args__ = (
        Index("ix_records_repo_slug", "repo", "slug"),
        Index("ix_records_modified_at", "modified_at"),
        Index("ix_records_repo_id", "repo", "id"),
        Index("ix_records_error_class_id", "error_class", "id"),
        Index("ix_records_review_state_id", "review_state", "id"),
        Index("ix_records_site_key", "site_key"),
        Index("ix_records_severity_id", "severity", "id"),
        Index("ix_records_error_type_id", "error_type", "id"),
        Index("ix_records_handling_strategy_id", "handling_strategy", "id"),
    )

    id: str = Field(primary_key=True, max_length=ID_LENGTH)
    repo: str
    slug: str
    error_class: str
    error_type: str
    severity: str
    handling_strategy: str | None = None
    file_path: str | None = None
    line_number: int | None = None
    error_message: str = Field(sa_column=Column(Text, nullable=False))
    message_pattern: str = Field(sa_column=Column(Text, nullable=False))
    document: str = Field(sa_column=Column(Text, nullable=False))
    content_hash: str = Field(max_length=64)
    review_state: str = Field(default="reviewed")
    origin: str = Field(default="import")
    gone_in: str | None = None
    site_key: str | None = Field(default=None, max_length=32)  # app.records.site_keys.site_key
    created_at: datetime
    modified_at: datetime


class RecordTag(SQLModel, table=True):
    """A record's tag, kept in its own table so the tag filter is an indexed lookup."""

    __tablename__ = "record_tags"
    __table_args__ = (Index("ix_record_tags_tag", "tag"),)

    record_id: str = Field(
        sa_column=Column(Text, ForeignKey("records.id", ondelete="CASCADE"), primary_key=True)
    )
    tag: str = Field(primary_key=True)


class RecordLocation(SQLModel, table=True):
    """Where a record's raise site is in one harvested release, or that it is gone there.

    Kept beside the record, never inside it: a curated record stays what was imported,
    and gains one row per release that harvest found its site in.
    """

    __tablename__ = "record_locations"
    __table_args__ = (Index("ix_record_locations_release_file", "release", "file_path"),)

    record_id: str = Field(
        sa_column=Column(Text, ForeignKey("records.id", ondelete="CASCADE"), primary_key=True)
    )
    release: str = Field(primary_key=True)  # `vllm==0.33.0`, or `owner/name@ref` for a folder
    ref: str
    file_path: str
    line_number: int | None = Field(default=None, sa_column=Column(Integer))
    function: str | None = None
    source_code: str | None = Field(default=None, sa_column=Column(Text))
    source_code_start: int | None = Field(default=None, sa_column=Column(Integer))
    source_code_end: int | None = Field(default=None, sa_column=Column(Integer))
    github_url: str | None = Field(default=None, sa_column=Column(Text))
    gone: bool = Field(default=False, sa_column=Column(Boolean, nullable=False))
    code_context: str | None = Field(default=None, sa_column=Column(Text))  # JSON


class RecordAlias(SQLModel, table=True):
    """The id of a draft that a reviewed record absorbed: it keeps answering."""

    __tablename__ = "record_aliases"
    __table_args__ = (Index("ix_record_aliases_record_id", "record_id"),)

    alias_id: str = Field(primary_key=True, max_length=ID_LENGTH)
    record_id: str = Field(
        sa_column=Column(Text, ForeignKey("records.id", ondelete="CASCADE"), nullable=False)
    )


class DatasetState(SQLModel, table=True):
    """Key/value facts about the whole dataset, such as its version."""

    __tablename__ = "dataset_state"

    key: str = Field(primary_key=True)
    value: str


class ReproducerRun(SQLModel, table=True):
    """One run of a record's reproducer: what ran, where, and how each check ended."""

    __tablename__ = "reproducer_runs"
    __table_args__ = (
        Index("ix_reproducer_runs_record_started", "record_id", "started_at"),
        Index("ux_reproducer_runs_run_key", "run_key", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    record_id: str = Field(
        sa_column=Column(Text, ForeignKey("records.id", ondelete="CASCADE"), nullable=False)
    )
    package: str | None = None
    version: str | None = None
    device: str
    python: str | None = None
    torch: str | None = None
    status: str
    trigger_status: str | None = None
    fix_status: str | None = None
    reason: str = Field(sa_column=Column(Text, nullable=False))
    duration_s: float
    output_tail: str = Field(sa_column=Column(Text, nullable=False))
    result: str | None = Field(default=None, sa_column=Column(Text))
    started_at: datetime
    # What it ran on, in words ("NVIDIA H200, 143,771 MiB, driver 580.159.04, compute
    # capability 9.0"), the CUDA version of its torch, and the file it was imported from
    # (a GPU machine's results, data/runs/); `run_key` makes importing a file twice a no-op.
    machine: str | None = Field(default=None, sa_column=Column(Text))
    cuda: str | None = None
    origin: str | None = Field(default=None, sa_column=Column(Text))
    run_key: str | None = None

    @property
    def where(self) -> str:
        """Where it ran, shortly: the GPU's name (what `machine` puts first), or CPU."""
        if self.device == "cpu":
            return "CPU"
        return self.machine.split(",")[0] if self.machine else "a CUDA GPU"

    @property
    def summary(self) -> str:
        """The run in one sentence: "Reproduced on NVIDIA H200 (torch 2.11.0+cu130, CUDA
        13.0, Python 3.12.3) on 2026-12-04", or "Failed on CPU (...) on ..." for a run that
        did not pass."""
        verb = {"passed": "Reproduced", "failed": "Failed", "error": "Could not run"}.get(
            self.status, "Skipped"
        )
        details = [f"torch {self.torch}" if self.torch else None]
        details += [f"CUDA {self.cuda}" if self.cuda and self.device == "cuda" else None]
        details += [f"Python {self.python}" if self.python else None]
        shown = ", ".join(part for part in details if part)
        return (
            f"{verb} on {self.where}"
            + (f" ({shown})" if shown else "")
            + f" on {self.started_at:%Y-%m-%d}"
        )


class GeneratedReproducer(SQLModel, table=True):
    """A reproducer generated from a record's raise site (app.reproducers.generation): kept
    with the record, its runs stored as ReproducerRun rows like a curated one's."""

    __tablename__ = "generated_reproducers"
    __table_args__ = (Index("ix_generated_reproducers_package", "package", "record_id"),)

    record_id: str = Field(
        sa_column=Column(Text, ForeignKey("records.id", ondelete="CASCADE"), primary_key=True)
    )
    package: str
    version: str
    module: str
    trigger_call: str = Field(sa_column=Column(Text, nullable=False))
    fix_call: str = Field(sa_column=Column(Text, nullable=False))
    direct_state: bool = Field(sa_column=Column(Boolean, nullable=False))
    script: str = Field(sa_column=Column(Text, nullable=False))
    generated_at: datetime


class DriftCheck(SQLModel, table=True):
    """Where a record's raise site stands in an upstream release (`errkb drift`)."""

    __tablename__ = "drift_checks"
    __table_args__ = (Index("ix_drift_checks_record_checked", "record_id", "checked_at"),)

    id: int | None = Field(default=None, primary_key=True)
    record_id: str = Field(
        sa_column=Column(Text, ForeignKey("records.id", ondelete="CASCADE"), nullable=False)
    )
    package: str
    version: str
    status: str
    found_line: int | None = None
    detail: str = Field(sa_column=Column(Text, nullable=False))
    checked_at: datetime


class Hit(SQLModel, table=True):
    """How often a record, or an unexplained error's scrubbed template, was met on one day.

    Only the subject and the day are kept, never a paste or a captured value.
    """

    __tablename__ = "hits"
    __table_args__ = (Index("ix_hits_day", "day"),)

    kind: str = Field(primary_key=True)
    subject: str = Field(sa_column=Column(Text, primary_key=True))
    day: date = Field(primary_key=True)
    count: int


class HitTotal(SQLModel, table=True):
    """A subject's hits summed over all its days, and its last day: what the curation queue
    lists, in the order of its index. The hit flush rewrites the totals of the subjects it
    changed, from their rows of `hits`."""

    __tablename__ = "hit_totals"
    __table_args__ = (Index("ix_hit_totals_queue", "hits", "kind", "subject"),)

    kind: str = Field(primary_key=True)
    subject: str = Field(sa_column=Column(Text, primary_key=True))
    hits: int = Field(sa_column=Column(BigInteger, nullable=False))
    last_hit: date


class ExceptionClass(SQLModel, table=True):
    """An exception class of one harvested release and the names of its bases.

    Kept so that a pasted class that is a subclass or a superclass of the record's class
    (renamed or refined between releases) agrees in part rather than not at all.
    """

    __tablename__ = "exception_classes"

    release: str = Field(primary_key=True)
    name: str = Field(primary_key=True)
    bases: str = Field(sa_column=Column(Text, nullable=False))  # JSON list of base names


def table_of(model: type[SQLModel]) -> Table:
    """The Core table of a table model: SQLModel sets `__table__` but does not declare it."""
    table = inspect(model).local_table
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not a table model")
    return table
