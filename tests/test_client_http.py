"""The API client against a real `errkb serve`: its three questions, and each failure as
one line (the CLI's use of them: tests/test_cli_client.py)."""

import pytest

from app.client.http import ApiClient, ClientError
from tests.helpers.logs import FREE_BUFFERS_ID, VLLM_LOG


def test_match_search_and_record(errkb_server: str) -> None:
    with ApiClient(errkb_server + "/", 10) as client:
        matched = client.match(VLLM_LOG, 3)
        assert matched["matches"][0]["id"] == FREE_BUFFERS_ID
        page = client.search("buffers", {"repo": "vllm-project/vllm"}, 1, None)
        assert [hit["record"]["repo"] for hit in page["items"]] == ["vllm-project/vllm"]
        more = client.search("buffers", {"repo": "vllm-project/vllm"}, 1, page["nextCursor"])
        assert more["items"] != page["items"]
        assert client.record(FREE_BUFFERS_ID)["record"]["id"] == FREE_BUFFERS_ID
        assert client.link(FREE_BUFFERS_ID) == f"{errkb_server}/errors/{FREE_BUFFERS_ID}"


def test_a_refused_request_names_the_status_and_the_reason(errkb_server: str) -> None:
    with ApiClient(errkb_server, 10) as client, pytest.raises(ClientError) as refused:
        client.search("x", {"modifiedSince": "yesterday"}, 1, None)
    assert refused.value.status == 422
    assert str(refused.value).startswith(f"{errkb_server} answered 422 ")
    assert "\n" not in str(refused.value)


def test_a_wrong_base_address_is_a_404_not_a_crash(errkb_server: str) -> None:
    with ApiClient(errkb_server + "/static", 10) as client, pytest.raises(ClientError) as wrong:
        client.record(FREE_BUFFERS_ID)
    assert wrong.value.status == 404
    assert str(wrong.value).startswith(f"{errkb_server}/static answered 404 ")


def test_no_server_and_a_silent_one(silent_server: str) -> None:
    with pytest.raises(
        ClientError, match=r"^cannot reach http://127\.0\.0\.1:9: Connection refused$"
    ):
        ApiClient("http://127.0.0.1:9", 1).match("x", 1)
    with pytest.raises(ClientError, match=r" did not answer within 0\.2 s$"):
        ApiClient(silent_server, 0.2).record("x")
