"""The template kept for an unmatched paste holds no value from it: the README promises that
"no value from the paste is kept", and these tests hold every page and the database to it."""

import subprocess
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from app.config import PROJECT_ROOT
from app.curation import scrub
from app.curation.hits import TEMPLATE
from app.curation.scrub import (
    KEY_WORD_PIECES,
    MIN_SECRET_CHARS,
    _detectors,
    _Kept,
    _secrets,
    shown_template,
    template_key,
)
from app.records.vocabulary import Vocabulary, words_of
from tests.helpers.records import DATA_DIR
from tests.helpers.served import ERRKB, client_env, errkb_serve
from tests.helpers.store_dump import database_text

README_PROMISE = "no value from the paste is kept"
SECRET_CHUNK = 6  # no run of this many characters of a secret may show anywhere

# (what the message says, the secret part of it): real shapes, not real secrets.
SECRET_SHAPES = [
    ("AWS key {}", "AKIAQZ7XW4MBRT3KPL2N"),
    ("aws secret {}", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzqv9xKEYQ"),
    ("GitHub token {}", "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"),
    ("GitHub fine-grained github_pat_{}", "11ABCDEFG0qzXw_9fJkLmNoPqRsTuVwXyZaBcDeFgHiJ"),
    ("token {}", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"),
    ("lowercase token {}", "hf_qzvbkwmtrxplnhgdsfcjyu"),
    ("OpenAI key {}", "sk-proj-Qz9x8KwYtRvB3nLm4HjG7fDcA2sE5pUo1iT6yWq0"),
    ("legacy OpenAI key {}", "sk-T3BlbkFJqZx7Wv9Yt2Rn4Mk8Lp6Hj3Gf5Dd1Ss0Aa9Qq"),
    ("Slack {}", "xoxb-2837465019-7362514098-QzWxEcRvTbYnUmIoPlKjHgFd"),
    (
        "JWT {}",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJxYXJsb3R0YSJ9"
        ".Xq3vB8nKz1Wm5Rt7Yp9Lc2Jd4Hf6Gs8Ak0Eo",
    ),
    ("connection to {} failed", "postgresql://admin:Sup3rSecretPwZZ@db-qzv.internal:5432/prod"),
    ("fetch {} refused", "https://qarlotta:hunter2zq@registry.qzv-corp.example/v2/private"),
    ("mail {} bounced", "qarlotta.vbk@corpmail-zq.org"),
    ("peer {} unreachable", "10.214.77.193"),
    ("peer {} unreachable", "2001:db8:85a3::8a2e:370:7334"),
    ("resolve {} failed", "gpu-node-17.qzv-cluster.internal"),
    ("cannot open {}", "C:\\Users\\qarlotta\\vkb-run\\ckpt_7731.bin"),
    ("cannot open {}", "/home/qarlotta/vkb-run/ckpt_7731.safetensors"),
    ("blob {} rejected", "U2VjcmV0UGF5bG9hZFF6dnhrd21ocnE5OTE3Mw=="),
    ("config password: {} invalid", "plughxyzzy"),
    ("header Bearer:{} rejected", "Qz9xKwYtRvB3nLm4HjG7"),
]
PASTES = [f"ValueError: {message.format(secret)}" for message, secret in SECRET_SHAPES]
PAGES = ("/api/curation/queue?limit=200", "/curate", "/stats", "/api/stats/charts")
# Words of upstream message templates and classes, as a store holds them
# (app.records.vocabulary): what a template of an unexplained paste may keep.
VOCABULARY = Vocabulary(
    words_of(
        "Connection to {url} failed with token {token}. AWS key {key} has no secret access. "
        "GitHub token {token} of a fine-grained key. Lowercase {name} is invalid. "
        "OpenAI key {key} and legacy key {key}. Slack JWT {jwt}. fetch {url} refused. "
        "mail {address} bounced. Peer {peer} unreachable: resolve {host} failed. "
        "Cannot open {path}. Blob {blob} rejected. Config password: {password} invalid. "
        "Header Bearer: {token} rejected. {max_model_len} exceeds max_position_embeddings "
        "({max_position_embeddings}) on cuda: CUDA out of memory, {size} GiB free. "
        "torch.OutOfMemoryError"
    )
)


def _chunks(secret: str) -> set[str]:
    return {secret[at : at + SECRET_CHUNK] for at in range(len(secret) - SECRET_CHUNK + 1)}


def _leaks(text: str) -> list[str]:
    """The secrets of which some run of SECRET_CHUNK characters shows in the text."""
    return [secret for _, secret in SECRET_SHAPES if any(c in text for c in _chunks(secret))]


def test_readme_makes_the_promise_these_tests_hold() -> None:
    assert README_PROMISE in " ".join(Path(PROJECT_ROOT / "README.md").read_text().split())


def test_template_keeps_the_prose_and_replaces_every_value() -> None:
    assert (
        template_key(
            "ValueError",
            "connection to postgresql://admin:Sup3rSecretPwZZ@db.internal:5432/prod failed "
            "with token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123",
            VOCABULARY,
        )
        == "ValueError: connection to <url> failed with token <secret>"
    )
    assert (
        template_key(
            "RuntimeError",
            "max_model_len=4096 exceeds max_position_embeddings (2048) on cuda:0",
            VOCABULARY,
        )
        == "RuntimeError: max_model_len=<num> exceeds max_position_embeddings (<num>) on cuda:<num>"
    )
    assert template_key(
        "torch.OutOfMemoryError", "CUDA out of memory, 2.5 GiB free", VOCABULARY
    ) == ("torch.OutOfMemoryError: CUDA out of memory, <num> GiB free")
    assert template_key("Sup3rSecretPwZZ.Error", "x", VOCABULARY) == "<value>.Error: <value>"
    for paste, (_, secret) in zip(PASTES, SECRET_SHAPES, strict=True):
        template = template_key("ValueError", paste.removeprefix("ValueError: "), VOCABULARY)
        assert not _chunks(secret) & _chunks(template), template
        assert shown_template(template, VOCABULARY) == template  # the filter is stable


@pytest.mark.parametrize(
    ("error_class", "message", "template"),
    [
        (
            "AuthenticationError",
            "login failed; password is hunter for admin",
            "AuthenticationError: <value> failed; password is <value> for <value>",
        ),
        (
            "ConnectionError",
            "Error connecting to host mirabelle-workstation port 5432",
            "ConnectionError: Error connecting to host <value> port <num>",
        ),
        (  # a user name, a project name, words of the class kept
            "QarlottaAuthenticationError",
            "authentication of qarlotta for project zephyrine refused",
            "QarlottaAuthenticationError: authentication of qarlotta for <value> refused",
        ),
        (
            "mirabelle_tools.ConfigError",
            "config of mirabelle invalid",
            "<value>.ConfigError: config of <value> invalid",
        ),
        (  # full-width letters and another apostrophe: the words they are
            "ValueError",
            "\uff23\uff35\uff24\uff21 doesn\u02bct have the key",
            "ValueError: \uff23\uff35\uff24\uff21 doesn\u02bct have the key",
        ),
        ("ConnectionRefusedError", "", "ConnectionRefusedError"),
    ],
)
def test_a_word_no_template_has_is_a_value(error_class: str, message: str, template: str) -> None:
    vocabulary = Vocabulary(
        VOCABULARY.words
        | words_of("Error connecting to port {port}. Config {name} invalid. doesn't")
    )
    assert template_key(error_class, message, vocabulary) == template


def test_no_secret_from_a_paste_is_stored_or_shown(make_client) -> None:
    """The README's promise, "no value from the paste is kept", on every way in and out."""
    client = make_client()
    for paste in PASTES:
        assert client.post("/api/match", json={"text": paste}).status_code == 200
        assert client.post("/match", data={"text": paste, "mode": "match"}).status_code == 200
    assert client.post("/api/match/batch", json={"texts": PASTES}).status_code == 200
    client.app.state.services.hits.flush()
    queue = client.get("/api/curation/queue?limit=200").json()
    assert queue["total"] >= len(SECRET_SHAPES) // 2  # the pastes were counted
    assert _leaks(database_text(client.app.state.services.engine)) == []
    for page in PAGES:
        response = client.get(page)
        assert response.status_code == 200
        assert _leaks(response.text) == [], page


@pytest.mark.parametrize(
    "stored",
    [
        "ValueError: connection to postgresq<path>:Sup<num>rSecretPwZZ@db.interna<path> failed"
        " with token hf_AbCdEfGhIjKlMnOpQrStUvWxYz<num>",
        "KeyError: token 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",
    ],
)
def test_a_template_stored_by_an_older_filter_is_shown_clean(make_client, stored: str) -> None:
    client = make_client()
    client.app.state.services.hits.add(TEMPLATE, stored)
    client.app.state.services.hits.flush()
    shown = [item["template"] for item in client.get("/api/curation/queue").json()["items"]]
    assert shown == [shown_template(stored, client.app.state.services.matcher.vocabulary())]
    for page in PAGES:
        text = client.get(page).text
        for secret in ("SecretPwZZ", "AbCdEfGhIj", "wWPw5k4aXc"):
            assert secret not in text, page


def _all_rules_find(text: str) -> set[str]:
    """What every rule of detect-secrets finds in the text, none of them skipped."""
    shapes, keywords = _detectors()
    found = (finding for analyze in shapes + keywords for finding in analyze(text))
    return {f for f in found if isinstance(f, str) and len(f) >= MIN_SECRET_CHARS}


def test_every_key_word_of_the_keyword_rules_holds_a_piece_looked_for() -> None:
    from detect_secrets.plugins import keyword

    for word in keyword.DENYLIST:
        spellings = {word.replace("_?", ""), word.replace("_?", "_")}
        assert all(any(p in s for p in KEY_WORD_PIECES) for s in spellings), word


@pytest.mark.parametrize(
    "text",
    [
        "config password: plughxyzzy invalid",
        'db_pass = "Qz9xKwYtRvB3"',
        "PRIVATE_KEY: hunter2zqv",
        "pa\u017f\u017fword: plughxyzzy",  # a long s: re.IGNORECASE reads it as s
        "contraseña = 'tr0mbone'",
        "client_key := value123",
        "token mismatch: expected 4096 got 8192",
    ],
)
def test_the_keyword_rules_skipped_find_what_all_rules_find(text: str) -> None:
    assert _secrets(text) == _all_rules_find(text)


KEY_WORDS_SPELT = ["password", "PassWd", "api_key", "Secret", "pwd", "\u017fecret", "= ", ": "]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(KEY_WORDS_SPELT)
        | st.text(alphabet="abcKS\u017f_-:='\" 0123456789", max_size=12),
        max_size=8,
    ).map("".join)
)
def test_skipping_the_keyword_rules_never_loses_a_secret(text: str) -> None:
    assert _secrets(text) == _all_rules_find(text)


def test_a_message_pasted_again_is_not_scrubbed_again(monkeypatch) -> None:
    scrubbed: list[str] = []
    monkeypatch.setattr(scrub, "_kept", _Kept())
    monkeypatch.setattr(scrub, "scrub_message", lambda text, _known: scrubbed.append(text) or text)
    message = "CUDA out of memory. Tried to allocate 2.00 GiB"
    first = template_key("torch.OutOfMemoryError", message, VOCABULARY)
    assert template_key("torch.OutOfMemoryError", f"  {message}\nsecond line", VOCABULARY) == first
    assert len(scrubbed) == 1
    template_key("RuntimeError", message, VOCABULARY)  # another class: another template
    template_key("torch.OutOfMemoryError", message + " (GPU 0)", VOCABULARY)
    assert len(scrubbed) == 3
    # other words in the store: what was kept may no longer be right, and is made again
    template_key("torch.OutOfMemoryError", message, Vocabulary(VOCABULARY.words))
    assert len(scrubbed) == 4


def test_kept_templates_hold_no_value_of_a_paste_and_stay_bounded(monkeypatch) -> None:
    monkeypatch.setattr(scrub, "_kept", _Kept())
    monkeypatch.setattr(scrub, "TEMPLATES_KEPT", 8)
    for paste in PASTES * 2:
        error_class, _, message = paste.partition(": ")
        template_key(error_class, message, VOCABULARY)
        assert len(scrub._kept) <= 8
    kept = " ".join(scrub._kept.values())
    assert not _leaks(kept)
    assert all(isinstance(key, bytes) and len(key) == 16 for key in scrub._kept)


# Word-shaped values of each kind, in unexplained errors (no record has these messages)
WORD_SECRETS = [
    ("AuthenticationError", "login failed; password is hunter for admin"),
    ("ConnectionError", "Error connecting to host mirabelle-workstation port 5432"),
    ("PermissionError", "user qarlotta may not write to project zephyrine"),
    ("ValueError", "the passphrase is correct horse battery staple"),
    ("RuntimeError", "token hf_qzvbkwmtrxplnhgdsfcjyu rejected"),
    ("ConnectionRefusedError", "could not reach https://qarlotta:trombone@vkb-corp.example/v2"),
    ("OSError", "mail to qarlotta.vbk@corpmail-zq.org bounced"),
    ("FileNotFoundError", "no checkpoint at /home/qarlotta/zephyrine/ckpt.bin"),
]
NEVER_SHOWN = [
    "hunter", "mirabelle", "qarlotta", "zephyrine", "horse", "battery",
    "staple", "qzvbkwmtrx", "trombone", "vkb-corp", "corpmail",
]  # fmt: skip


def _word_paste(error_class: str, message: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/qarlotta/zephyrine/train.py", line 12, in <module>\n'
        "    main()\n"
        f"{error_class}: {message}\n"
    )


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_word_secrets_show_nowhere_on_a_real_server(tmp_path: Path, log_format: str) -> None:
    """A real `errkb serve` (data/records imported) is sent each kind of word-shaped value
    in unexplained errors, by every way in; no place that could show one does: the
    pages, the API, /metrics, the server's log, the store and `errkb export`."""
    pastes = [_word_paste(error_class, message) for error_class, message in WORD_SECRETS]
    with (
        errkb_serve(tmp_path, ERRKB_LOG_FORMAT=log_format) as base,
        httpx.Client(base_url=base, timeout=60) as client,
    ):
        for paste in pastes:
            assert client.post("/api/match", json={"text": paste}).status_code == 200
            assert client.post("/match", data={"text": paste}).status_code == 200
        assert client.post("/api/match/batch", json={"texts": pastes}).status_code == 200
        queue = client.get("/api/curation/queue", params={"limit": 200}).json()
        shown = {page: client.get(page).text for page in (*PAGES, "/metrics")}
    templates = [item["template"] for item in queue["items"] if item["template"]]
    # every paste was counted, under its class, the words no template has made values
    classes = {template.partition(":")[0] for template in templates}
    assert classes == {error_class for error_class, _ in WORD_SECRETS}
    assert all(item["hits"] == 3 for item in queue["items"])
    assert "ConnectionRefusedError: could not <value> <url>" in templates
    assert any("<value>" in template for template in templates)
    engine = create_engine(f"sqlite:///{tmp_path / 'errkb.db'}")
    exported = subprocess.run(
        [*ERRKB, "export"],
        env=client_env(ERRKB_DATABASE_URL=str(engine.url)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert exported.count("\n") >= len(list(DATA_DIR.glob("*.json")))  # the records are there
    places = {
        **shown,
        "the queue": " ".join(templates),
        "the log": (tmp_path / "serve.log").read_text(),
        "the store": database_text(engine),
        "errkb export": exported,
    }
    engine.dispose()
    for place, text in places.items():
        found = [word for word in NEVER_SHOWN if word in text.casefold()]
        assert found == [], place
