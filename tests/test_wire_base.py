"""Extended: a domain object read with a few attributes more, the rest its own."""

from dataclasses import dataclass

from app.wire.base import ApiModel, Extended


@dataclass
class _Results:
    query: str
    total: int


class _Page(ApiModel):
    query: str
    total: int
    dataset_version: str


def test_a_model_reads_the_added_attributes_and_the_object_s_own() -> None:
    page = _Page.model_validate(Extended(_Results("free", 3), dataset_version="v1"))
    assert page.model_dump(by_alias=True) == {"query": "free", "total": 3, "datasetVersion": "v1"}


def test_an_added_attribute_hides_the_object_s_own() -> None:
    page = _Page.model_validate(Extended(_Results("free", 3), total=1, dataset_version="v1"))
    assert page.total == 1
