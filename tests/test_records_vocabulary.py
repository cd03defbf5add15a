"""The store's words: read from every record's message template and class, normalised, and
followed by the match index as writes come in."""

from sqlmodel import Session

from app.records.vocabulary import Vocabulary, normal_word, store_words, words_of
from tests.helpers.records import curated_records
from tests.helpers.writers import probe_record


def test_words_come_whole_and_in_parts_normalised() -> None:
    words = words_of(
        "max_model_len ({max_model_len}) exceeds the model's limit: OutOfMemoryError, "
        "non-contiguous \uff23\uff35\uff24\uff21 tensors don\u2019t 4096"
    )
    assert {"max_model_len", "max", "model", "len", "model's"} <= words
    assert {"outofmemoryerror", "out", "of", "memory", "error"} <= words
    assert {"non-contiguous", "non", "contiguous", "cuda", "don't"} <= words
    assert not any(char.isdigit() for word in words for char in word)
    assert normal_word("Don\u02bcT") == "don't"
    assert normal_word("\uff36\uff41\uff4c\uff55\uff45") == "value"


def test_the_store_words_are_those_of_its_records_templates_and_classes(make_client, auth) -> None:
    client = make_client()
    for record in curated_records().values():
        assert client.post("/api/errors", json=record, headers=auth).status_code == 201
    with Session(client.app.state.services.engine) as session:
        words = store_words(session)
    expected = set()
    for record in curated_records().values():
        expected |= words_of(f"{record['errorMessage']}\n{record['errorClass']}")
    assert words == expected
    assert "mirabelle" not in words


def test_the_match_index_takes_in_the_words_of_each_write(make_client, auth) -> None:
    client = make_client()
    paste = "Traceback (most recent call last):\nValueError: the quokka refused\n"
    assert client.post("/api/match", json={"text": paste}).json()["matches"] == []
    before = client.app.state.services.matcher.vocabulary()
    assert "quokka" not in before
    record = probe_record("00000000000000aa", "a quokka") | {
        "errorMessage": "the quokka {name} is asleep",
        "messagePattern": "the quokka (?P<name>.+?) is asleep",
    }
    assert client.post("/api/errors", json=record, headers=auth).status_code == 201
    client.post("/api/match", json={"text": paste})  # the index takes the write in
    after = client.app.state.services.matcher.vocabulary()
    assert {"quokka", "asleep"} <= after.words
    assert after is not before
    client.app.state.services.hits.flush()
    shown = [item["template"] for item in client.get("/api/curation/queue").json()["items"]]
    # before the write its word was a value; after it, a word of the store's
    assert sorted(shown) == ["ValueError: the <value>", "ValueError: the quokka <value>"]
    # a write that brings no new word keeps the vocabulary, and what was kept under it
    again = probe_record("00000000000000ab", "again") | {
        "errorMessage": "the quokka is asleep",
        "messagePattern": "the quokka is asleep",
    }
    assert client.post("/api/errors", json=again, headers=auth).status_code == 201
    client.post("/api/match", json={"text": paste})
    assert client.app.state.services.matcher.vocabulary() is after


def test_a_vocabulary_is_keyed_by_identity() -> None:
    one, other = Vocabulary({"a"}), Vocabulary({"a"})
    assert len({one: 1, other: 2}) == 2
    assert "a" in one
    assert len(one) == 1
