"""The web pages without a browser: content, escaping, links, errors, styles."""

import re
from collections.abc import Callable
from datetime import UTC, datetime
from html.parser import HTMLParser
from itertools import pairwise

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.records import service as records
from app.store.tables import ReproducerRun
from app.web import render
from app.web.routes import STATIC_DIR
from tests.helpers.pages import RECORD_SECTIONS
from tests.helpers.records import SEED_001, SEED_002, SEED_002_ERROR, SEED_FILES, make_record

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
WCAG_AA = 4.5


class _Page(HTMLParser):
    """What the tests look at in a page: headings, scripts, stylesheets, elements."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.headings: list[tuple[int, str]] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._heading: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = [tag]

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._heading is not None and tag == self._heading[0]:
            text = " ".join("".join(self._heading[1:]).split())
            self.headings.append((int(tag[1]), text))
            self._heading = None

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def _page(response) -> _Page:
    assert response.headers["content-type"].startswith("text/html")
    page = _Page(response.text)
    levels = [level for level, _ in page.headings]
    assert levels[0] == 1, page.headings
    assert levels.count(1) == 1, page.headings
    assert all(b <= a + 1 for a, b in pairwise(levels)), page.headings
    scripts = [attrs.get("src") for attrs in page.all("script")]
    assert scripts == ["/static/app.js"], "no inline or outside scripts"
    for attrs in page.all("link"):
        assert not (attrs.get("href") or "").startswith(("http:", "https:", "//")), attrs
    return page


def test_home_page_has_the_box_recent_records_and_stats(make_client) -> None:
    response = make_client(*SEED_FILES).get("/")  # the seeds, the newest records here
    assert response.status_code == 200
    page = _page(response)
    assert (1, "Explain an error") in page.headings
    form = page.all("form")[1]
    assert form["action"] == "/match"
    assert form["method"] == "post"
    assert [a["value"] for a in page.all("input") if a.get("type") == "radio"] == [
        "auto",
        "match",
        "search",
    ]
    assert '<label for="text">' in response.text
    for record_id in (SEED_001, SEED_002):
        assert f'href="/errors/{record_id}"' in response.text
    assert "<dt>Records</dt><dd>3</dd>" in response.text
    assert response.headers["link"] == '</api/stats>; rel="alternate"; type="application/json"'


def test_search_page_marks_snippets_and_links_filters(client: TestClient) -> None:
    response = client.get("/search", params={"q": "free"})
    assert response.status_code == 200
    page = _page(response)
    assert "<mark>free</mark>" in response.text.lower()
    hrefs = [attrs["href"] for attrs in page.all("a")]
    assert "/search?q=free&repo=sgl-project%2Fsglang" in hrefs
    assert "/search?q=free&errorClass=MemoryError" in hrefs
    assert "/search?q=free&tag=double-free" in hrefs
    assert (
        response.headers["link"] == '</api/search?q=free>; rel="alternate"; type="application/json"'
    )


def test_search_page_applies_and_removes_filters(client: TestClient) -> None:
    response = client.get("/search", params={"q": "free", "tag": "cuda"})
    assert f'href="/errors/{SEED_002}"' in response.text
    assert f'href="/errors/{SEED_001}"' not in response.text
    assert re.search(
        r'<a href="/search\?q=free" aria-label="Remove the filter tag cuda">', response.text
    )


def test_search_page_paginates(make_client: Callable[..., TestClient], auth: dict) -> None:
    client = make_client()
    for number in range(1, 26):
        record = make_record(number, f"Ocelot {number} failed")
        client.post("/api/errors", json=record, headers=auth)
    first = client.get("/search", params={"q": "ocelot"})
    assert "1–20 of 25" in first.text
    next_link = re.search(r'<a rel="next" href="([^"]+)"', first.text).group(1)
    second = client.get(next_link.replace("&amp;", "&"))
    assert "21–25 of 25" in second.text
    assert 'rel="prev"' in second.text
    assert 'rel="next"' not in second.text


@pytest.mark.parametrize("query", ['"', "(", "<script>", HOSTILE, "NEAR(a", "-*:"])
def test_hostile_search_is_escaped_and_never_fails(client: TestClient, query: str) -> None:
    response = client.get("/search", params={"q": query})
    assert response.status_code == 200
    _page(response)
    assert "<script>alert" not in response.text
    assert "<img" not in response.text


def test_a_query_from_the_box_is_searched_in_place_never_redirected(client: TestClient) -> None:
    """What is typed in the box never reaches a URL (access logs, history): a query is
    searched on the POST's own page."""
    response = client.post("/match", data={"text": "wrapping"}, follow_redirects=False)
    assert response.status_code == 200
    assert "location" not in response.headers
    page = _page(response)
    assert (1, "Search results") in page.headings
    assert "<q>wrapping</q>" in response.text
    assert response.text == client.get("/search", params={"q": "wrapping"}).text
    forced = client.post(
        "/match", data={"text": SEED_002_ERROR, "mode": "search"}, follow_redirects=False
    )
    assert forced.status_code == 200
    assert (1, "Search results") in _page(forced).headings
    secret = "postgres://admin:S3cretPassw0rd@db.internal:5432/prod"
    one_line = client.post("/match", data={"text": secret}, follow_redirects=False)
    assert one_line.status_code == 200
    assert "location" not in one_line.headers


def test_a_paste_from_the_box_is_matched(client: TestClient) -> None:
    paste = (
        f"INFO starting <server> & friends\nTraceback (most recent call last):\n{SEED_002_ERROR}\n"
    )
    response = client.post("/match", data={"text": paste})
    assert response.status_code == 200
    page = _page(response)
    assert (1, "Match results") in page.headings
    assert f'href="/errors/{SEED_002}"' in response.text
    assert re.search(
        r"<dt><code>control_offset</code></dt><dd><code>4096</code></dd>", response.text
    )
    assert 'id="exception-0"' in response.text
    assert "INFO starting &lt;server&gt; &amp; friends" in response.text
    assert f'<mark class="exception matched" id="exception-0">{SEED_002_ERROR}</mark>' in (
        response.text
    )


def test_a_word_can_be_forced_to_match(client: TestClient) -> None:
    response = client.post("/match", data={"text": "wrapping", "mode": "match"})
    assert response.status_code == 200
    assert "No record matches this paste" in response.text


def test_record_page_has_the_sections_a_reader_expects(client: TestClient, seed_records) -> None:
    response = client.get(f"/errors/{SEED_002}")
    assert response.status_code == 200
    page = _page(response)
    assert [text for level, text in page.headings if level == 2] == RECORD_SECTIONS
    record = seed_records[SEED_002]
    assert f'href="{record["githubUrl"]}"' in response.text
    assert "View on GitHub (pinned to 0132848349)" in response.text
    hll = re.search(r'<span class="hll">(.*?)\n', response.text).group(1)
    assert '<span class="linenos">535</span>' in hll
    assert "raise" in hll
    assert 'class="linenos">517</span>' in response.text
    assert "No reproducer run yet" in response.text
    assert f'href="/api/errors/{SEED_002}"' in response.text
    link = f'</api/errors/{SEED_002}>; rel="alternate"; type="application/json"'
    assert response.headers["link"] == link
    assert '<a href="/errors/c53f6de81577a6bc">' in response.text


def test_record_page_by_repo_and_slug(client: TestClient, seed_records) -> None:
    record = seed_records[SEED_001]
    response = client.get(f"/{record['repo']}/{record['slug']}")
    assert response.status_code == 200
    assert response.headers["link"].startswith(f"</api/errors/{SEED_001}>")
    assert client.get("/vllm-project/vllm/no-such-slug").status_code == 404


def test_record_text_is_escaped(make_client: Callable[..., TestClient], auth: dict) -> None:
    client = make_client()
    record = make_record(
        1,
        f"Bad {HOSTILE} value",
        documentation=f"Docs {HOSTILE}",
        solutions=[f"Fix {HOSTILE}"],
        exampleFix=f"x = '{HOSTILE}'",
        tryCatchPattern=f"Catch {HOSTILE}",
    )
    assert client.post("/api/errors", json=record, headers=auth).status_code == 201
    pages = [
        client.get(f"/errors/{record['id']}"),
        client.get("/search", params={"q": "docs"}),
        client.get("/"),
    ]
    for response in pages:
        assert response.status_code == 200
        _page(response)
        assert "<script>alert" not in response.text
        assert "<img" not in response.text
    assert "Docs &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in pages[0].text


def test_draft_record_says_so_and_has_no_prose(client: TestClient) -> None:
    with Session(client.app.state.services.engine) as session:
        records.set_review_state(session, SEED_002, records.DRAFT)
        session.commit()
    response = client.get(f"/errors/{SEED_002}")
    assert "draft: not yet explained" in response.text
    sections = [text for level, text in _page(response).headings if level == 2]
    assert sections == ["Error message", "Source", "Related errors", "Reproducer"]


def test_record_page_shows_the_latest_reproducer_run(client: TestClient) -> None:
    with Session(client.app.state.services.engine) as session:
        session.add(
            ReproducerRun(
                record_id=SEED_002,
                package="sglang",
                version="0.5.23",
                device="cpu",
                status="passed",
                trigger_status="passed",
                fix_status="passed",
                reason="the trigger raised the record's error; the fix did not",
                duration_s=2.5,
                output_tail="",
                started_at=datetime(2026, 11, 29, 12, 0, tzinfo=UTC),
            )
        )
        session.commit()
    text = client.get(f"/errors/{SEED_002}").text
    assert "<strong>Reproduced on CPU on 2026-11-29</strong>, against sglang 0.5.23" in text
    assert "No reproducer run yet" not in text


def test_unknown_pages_are_html_404s_and_api_stays_json(client: TestClient) -> None:
    for path in ("/errors/0000000000000000", "/no/such/page", "/nothing-here"):
        response = client.get(path)
        assert response.status_code == 404
        assert (1, "Not found") in _page(response).headings
    api = client.get("/api/errors/0000000000000000")
    assert api.status_code == 404
    assert api.json()["status"] == 404


def test_invalid_page_parameters_are_an_html_422(client: TestClient) -> None:
    response = client.get("/search", params={"q": "x" * 501})
    assert response.status_code == 422
    assert (1, "Invalid request") in _page(response).headings


def test_static_files_are_served_and_the_code_css_is_current(client: TestClient) -> None:
    for name in ("style.css", "pygments.css", "app.js", "favicon.svg"):
        assert client.get(f"/static/{name}").status_code == 200
    assert (STATIC_DIR / "pygments.css").read_text() == render.stylesheet(), (
        "regenerate with: python -m app.web.render"
    )


def _luminance(colour: str) -> float:
    hex_digits = colour.lstrip("#")
    if len(hex_digits) == 3:
        hex_digits = "".join(digit * 2 for digit in hex_digits)
    channels = [int(hex_digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(first: str, second: str) -> float:
    lighter, darker = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_code_colours_meet_wcag_aa_on_plain_and_highlighted_lines() -> None:
    style = (STATIC_DIR / "style.css").read_text()
    code_mark = re.search(r"--code-mark: (#[0-9a-fA-F]{6})", style).group(1)
    colours = set(re.findall(r"(?<![-\w])color: (#[0-9a-fA-F]{3,6})", render.stylesheet()))
    assert colours
    for background in ("#ffffff", code_mark):
        worst = min(_contrast(colour, background) for colour in colours)
        assert worst >= WCAG_AA, (background, worst)


def test_native_record_page_names_its_settings_where_its_release_does(client: TestClient) -> None:
    text = client.get("/errors/7921f04022ee6caf").text  # the NCCL watchdog's timeout
    assert "What the code says" in text
    assert "<code>NCCL_DEBUG=INFO</code>" in text
    assert "torch/nn/parallel/distributed.py:316</a>" in text
    device_side = client.get("/errors/7087d0ce19a5cdec").text
    assert "<code>CUDA_LAUNCH_BLOCKING=1</code>" in device_side
    assert "c10/cuda/CUDAMiscFunctions.cpp</a>" in device_side  # a C++ file: no line to cite
