"""Full-text search service: the index follows writes, ranking, snippets, hostility."""

import re

import pytest
from sqlmodel import Session

from app.app_error import AppError
from app.config import Settings
from app.matching.matcher import Matcher
from app.records import service as records
from app.records.filters import RecordFilters
from app.records.service import import_paths, write_records
from app.search import fts
from app.search import query as search_query
from app.search import related as search_related
from app.search import service as search
from app.store import postgres, sqlite
from app.store.engine import make_engine, upgrade
from tests.helpers.old_store import insert_at_revision
from tests.helpers.records import (
    HOSTILE_QUERIES,
    SEED_001,
    SEED_002,
    SEED_002_ERROR,
    SEED_FILES,
    SEED_IDS,
    make_record,
)


@pytest.fixture
def seeded(session: Session) -> Session:
    """The test session, holding the three seed records of data/ (the queries below name what
    each finds among them)."""
    assert import_paths(session, list(SEED_FILES)).written
    return session


def _ids(results: search.SearchResults) -> list[str]:
    return [hit.record.id for hit in results.hits]


def test_a_word_of_the_documentation_finds_its_record(seeded: Session) -> None:
    results = search.search(seeded, "wrapping")
    assert _ids(results) == [SEED_001]
    assert results.total == 1
    assert results.total_exact


def test_an_identifier_matches_as_a_phrase(seeded: Session) -> None:
    assert _ids(search.search(seeded, "occupied_size_new")) == [SEED_001]
    assert _ids(search.search(seeded, "(data_buffer_start)")) == [SEED_001]


def test_the_last_word_is_a_prefix(seeded: Session) -> None:
    assert _ids(search.search(seeded, "wrapp")) == [SEED_001]
    assert _ids(search.search(seeded, "pointer wrapp")) == [SEED_001]


def test_the_index_follows_create_edit_and_delete(session: Session) -> None:
    write_records(session, [make_record(1, "Widget exploded", documentation="aardvark")])
    session.commit()
    assert _ids(search.search(session, "aardvark")) == [f"{1:016x}"]

    write_records(session, [make_record(1, "Widget exploded", documentation="pangolin")])
    session.commit()
    assert _ids(search.search(session, "aardvark")) == []
    assert _ids(search.search(session, "pangolin")) == [f"{1:016x}"]

    records.set_review_state(session, f"{1:016x}", records.DRAFT)
    session.commit()
    assert _ids(search.search(session, "pangolin")) == [f"{1:016x}"]

    records.delete_record(session, f"{1:016x}")
    session.commit()
    assert _ids(search.search(session, "pangolin")) == []
    assert _ids(search.search(session, "widget")) == []


def test_records_stored_before_the_index_existed_are_indexed(settings: Settings) -> None:
    engine = make_engine(settings.database_url)
    upgrade(engine, "0001")
    insert_at_revision(engine, [make_record(7, "Gizmo failed", documentation="quokka")])
    upgrade(engine)
    with Session(engine) as session:
        assert _ids(search.search(session, "quokka")) == [f"{7:016x}"]


def test_a_message_hit_outranks_a_documentation_hit(session: Session) -> None:
    prose = "The okapi okapi okapi appears in this long explanation, okapi again."
    write_records(
        session,
        [
            make_record(1, "Stream stalled", documentation=prose),
            make_record(2, "Okapi stalled the stream"),
        ],
        review_state=records.DRAFT,
    )
    session.commit()
    results = search.search(session, "okapi")
    assert _ids(results) == [f"{2:016x}", f"{1:016x}"]
    assert [hit.matched_by for hit in results.hits] == [fts.SUMMARY, fts.TEXT]


def test_drafts_on_equal_scores_come_newest_first(session: Session) -> None:
    tapirs = [make_record(n, "Tapir failed", filePath=f"zoo/{n}.py") for n in (1, 2)]
    write_records(session, tapirs, review_state=records.DRAFT)
    session.commit()
    results = search.search(session, "tapir")
    assert results.hits[0].score == results.hits[1].score
    assert _ids(results) == [f"{2:016x}", f"{1:016x}"]


def test_reviewed_prose_ranks_above_drafts_sharing_a_message_word(session: Session) -> None:
    """A curated record that answers the query beats drafts that only name it."""
    drafts = [make_record(n, f"Tapir {n} failed", filePath=f"zoo/{n}.py") for n in (1, 2)]
    write_records(session, drafts, review_state=records.DRAFT)
    explained = make_record(3, "Enclosure breached", documentation="A tapir escaped its pen.")
    write_records(session, [explained])
    session.commit()
    results = search.search(session, "tapir")
    assert _ids(results)[0] == f"{3:016x}"
    assert [hit.matched_by for hit in results.hits] == [
        fts.REVIEWED,
        fts.SUMMARY,
        fts.SUMMARY,
    ]
    records.set_review_state(session, f"{3:016x}", records.DRAFT)
    records.set_review_state(session, f"{1:016x}", records.REVIEWED)
    session.commit()
    assert _ids(search.search(session, "tapir"))[0] == f"{1:016x}"


def test_a_reviewed_record_absorbs_the_draft_of_its_own_site(session: Session) -> None:
    write_records(session, [make_record(1, "Tapir failed")], review_state=records.DRAFT)
    write_records(session, [make_record(2, "Tapir failed")])
    session.commit()
    assert _ids(search.search(session, "tapir")) == [f"{2:016x}"]


def test_snippets_mark_the_matched_words(seeded: Session) -> None:
    hit = search.search(seeded, "wrapping pointer").hits[0]
    marked = [hit.snippet.text[start:end] for start, end in hit.snippet.marks]
    assert marked == ["wrapping", "pointer"]
    assert ("wrapping", True) in hit.snippet.parts()
    title = search.search(seeded, "buffers").hits[0].title
    assert [title.text[start:end].lower() for start, end in title.marks] == ["buffers"]


def test_words_beyond_ascii_are_folded_and_marked(session: Session) -> None:
    prose = "Le café déborde quand le Straße est pleine"
    write_records(session, [make_record(1, "Zoo closed", documentation=prose)])
    session.commit()
    for query, word in (("cafe", "café"), ("DÉBORDE", "déborde"), ("stra", "Straße")):
        hit = search.search(session, query).hits[0]
        assert [hit.snippet.text[start:end] for start, end in hit.snippet.marks] == [word]


def test_the_snippet_is_left_out_when_it_would_repeat_the_message(session: Session) -> None:
    write_records(session, [make_record(1, "Llama overflowed")])
    session.commit()
    hit = search.search(session, "llama").hits[0]
    assert hit.title.marks == ((0, 5),)
    assert hit.snippet is None


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_never_raise(seeded: Session, query: str) -> None:
    results = search.search(seeded, query[: search_query.MAX_QUERY_LENGTH])
    assert len(results.hits) <= results.total


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_user_text_reaches_match_only_as_quoted_words(query: str) -> None:
    phrases = search_query.query_phrases(query)
    if phrases:
        wanted = search_query.text_query(phrases)
        expression = sqlite.match_expression(wanted)
        assert re.fullmatch(r'"[^\W_]+( [^\W_]+)*"\*?( AND "[^\W_]+( [^\W_]+)*"\*?)*', expression)
        sql, params = postgres.tsquery_sql(wanted)
        assert all(re.fullmatch(r"[^\W_]+", word) for word in params.values())
        assert sum(len(words) for words in phrases) == len(params)
        assert "'" not in re.sub(r"'[^']*'", "", sql)  # every quote of the SQL is closed
    assert len(phrases) <= search_query.MAX_QUERY_TERMS


def test_operators_are_plain_words(session: Session) -> None:
    write_records(session, [make_record(1, "Near the end or not", documentation="and then")])
    session.commit()
    assert _ids(search.search(session, "NEAR")) == [f"{1:016x}"]
    assert _ids(search.search(session, "OR NOT")) == [f"{1:016x}"]


def test_no_record_with_every_word_relaxes_to_any_word(seeded: Session) -> None:
    results = search.search(seeded, "wrapping xylophone")
    assert results.relaxed
    assert _ids(results) == [SEED_001]


def test_filters_narrow_the_hits(seeded: Session) -> None:
    everything = search.search(seeded, "free")
    assert len(everything.hits) >= 2
    by_repo = search.search(seeded, "free", RecordFilters(repo="sgl-project/sglang"))
    assert _ids(by_repo) == [SEED_002]
    by_class = search.search(seeded, "free", RecordFilters(error_class="MemoryError"))
    assert _ids(by_class) == [SEED_001]
    by_tag = search.search(seeded, "free", RecordFilters(tag="double-free"))
    assert set(_ids(by_tag)) == {SEED_002, "c53f6de81577a6bc"}
    assert by_tag.total == 2


def test_pages_cover_every_hit_once(session: Session) -> None:
    write_records(session, [make_record(n, f"Capybara number {n} failed") for n in range(1, 26)])
    session.commit()
    seen, cursor, pages = [], None, 0
    while True:
        page = search.search(session, "capybara", limit=10, cursor=cursor)
        assert page.total == 25
        seen += _ids(page)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
        assert search.search(session, "capybara", limit=10, cursor=cursor).previous_cursor
    assert pages == 3
    assert sorted(seen) == sorted(f"{n:016x}" for n in range(1, 26))


def test_counting_stops_at_the_results_window(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MAX_RESULTS_WINDOW", 5)
    write_records(session, [make_record(n, f"Narwhal {n} failed") for n in range(1, 9)])
    session.commit()
    page = search.search(session, "narwhal", limit=3)
    assert page.total == 5
    assert not page.total_exact
    last = search.search(session, "narwhal", limit=3, cursor=page.next_cursor)
    assert last.next_cursor is None


@pytest.mark.parametrize("cursor", ["bogus", search.encode_cursor(10**6), "b2-1", "=="])
def test_a_cursor_we_did_not_make_is_a_400(seeded: Session, cursor: str) -> None:
    with pytest.raises(AppError) as raised:
        search.search(seeded, "free", cursor=cursor)
    assert raised.value.status == 400


def test_limits_are_enforced(seeded: Session) -> None:
    with pytest.raises(AppError):
        search.search(seeded, "free", limit=search.MAX_SEARCH_LIMIT + 1)
    with pytest.raises(AppError):
        search.search(seeded, "x" * (search_query.MAX_QUERY_LENGTH + 1))


def test_an_error_line_puts_the_record_the_matcher_finds_first(
    seeded: Session, settings: Settings
) -> None:
    matcher = Matcher(seeded.get_bind(), settings.cache_dir, settings.max_paste_bytes)
    results = search.search(seeded, SEED_002_ERROR, matcher=matcher)
    assert results.hits[0].record.id == SEED_002
    assert results.hits[0].matched_by == fts.MATCHER
    assert _ids(results).count(SEED_002) == 1
    without = search.search(seeded, SEED_002_ERROR)
    assert without.relaxed  # 4096 is in no record's text


def test_an_empty_query_lists_recent_records(seeded: Session) -> None:
    results = search.search(seeded, "  ")
    assert results.total == len(SEED_IDS)
    assert {hit.matched_by for hit in results.hits} == {fts.RECENT}
    filtered = search.search(seeded, "", RecordFilters(tag="cuda"))
    assert _ids(filtered) == [SEED_002]


def test_related_records_share_background_file_or_tags(seeded: Session) -> None:
    related = search_related.related_records(seeded, records.get_record(seeded, SEED_002))
    assert [item.record.id for item in related] == ["c53f6de81577a6bc"]
    assert related[0].reasons[0] == "same background: double-release-resource"


@pytest.mark.parametrize(
    ("text", "paste"),
    [
        ("wrapping", False),
        ("free buffers pool", False),
        ("RuntimeError: CUDA VMM pool", True),
        ("torch.cuda.OutOfMemoryError: CUDA out of memory", True),
        ("AssertionError", True),
        ("line one\nline two", True),
        ("see Traceback (most recent call last) above", True),
        ("what is an Error: in logs", False),
    ],
)
def test_a_paste_is_told_from_a_query(text: str, paste: bool) -> None:
    assert search_query.looks_like_paste(text) is paste
