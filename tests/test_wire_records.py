"""A record's wire shapes read from its domain objects: the summary from a stored record,
the links from its id, a location's status against the record given in the context."""

from types import SimpleNamespace

from app.wire.records import LocationOut, RecordLinks, RecordSummary

RECORD = SimpleNamespace(
    repo="vllm-project/vllm",
    slug="free-blocks",
    error_class="ValueError",
    error_message="No available memory for the cache blocks.",
    file_path="vllm/worker.py",
    line_number=12,
    severity="error",
    tags=["memory"],
)


def test_a_summary_reads_the_record_and_the_state_beside_it() -> None:
    stored = SimpleNamespace(id="0123456789abcdef", review_state="draft", record=RECORD)
    summary = RecordSummary.model_validate(stored).model_dump(by_alias=True)
    assert list(summary) == [
        "id",
        "repo",
        "slug",
        "errorClass",
        "errorMessage",
        "filePath",
        "lineNumber",
        "severity",
        "tags",
        "reviewState",
    ]
    assert summary["errorClass"] == "ValueError"
    assert summary["reviewState"] == "draft"


def test_links_follow_from_the_id() -> None:
    assert RecordLinks.model_validate("abc").model_dump() == {
        "self": "/api/errors/abc",
        "html": "/errors/abc",
        "reproducer": "/api/errors/abc/reproducer",
    }


def test_a_location_is_compared_with_the_record_in_the_context() -> None:
    seen = []

    def status(record: object) -> str:
        seen.append(record)
        return "moved"

    location = SimpleNamespace(
        release="vllm==0.1.0",
        ref="v0.1.0",
        file_path="vllm/worker.py",
        line_number=14,
        function="allocate",
        source_code=None,
        source_code_start=None,
        source_code_end=None,
        github_url=None,
        gone=False,
        status=status,
        context={"guard": "if not free:", "explanation": {"settings": []}},
    )
    shown = LocationOut.model_validate(location, context={"record": RECORD})
    assert shown.status == "moved"
    assert seen == [RECORD]
    assert shown.code_context == {"guard": "if not free:"}  # the explanation is answered apart
