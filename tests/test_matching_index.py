"""Tests for app.matching.index: hits, spans, captures, writes, the cache and refused constructs,
on real patterns (raise sites of the installed torch, or of the service's own libraries where
torch is not installed) and on both backends.

The corpus helpers (Template, harvest_message_templates, traceback_text) are also what
bench/bench_index.py builds its inputs from.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import random
import re
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.matching import prefilter
from app.matching.index import MAX_HITS_PER_KEY, MAX_SUBJECT_CHARS, Captures, Hit, PatternIndex
from app.matching.pattern_entry import pattern_entry
from app.matching.scanned_text import MAX_SCAN_BYTES, ScannedText, one_byte
from app.patterns import (
    MAX_GROUPS,
    MAX_PROGRAM_SIZE,
    PatternError,
    check_pattern,
    program_fits,
)
from tests.helpers.index import BACKENDS, hyperscan

MIN_LITERAL_CHARS = 8
"""Harvested messages with less fixed text than this (``raise ValueError(msg)``) say nothing."""

TORCH_SUBPACKAGES = ("cuda", "nn", "export", "_subclasses", "ao", "utils")
"""A few thousand raise, assert and warn sites, parsed in about three seconds."""
SERVICE_PACKAGES = ("sqlalchemy", "pydantic", "alembic", "starlette")
"""Where torch is not installed (it comes with the reproducers extra only), the raise sites of
libraries the service always installs: over 1,500 real messages too."""

FILLS = ("4096", "torch.float16", "'cuda:0'", "[2, 3]", "None", "ünïcødé", "日本語", "a=b (c)")
"""Values for placeholders: numbers, reprs, non-ASCII text, and the separators of the patterns
themselves, which lazy groups must not trip on."""


@dataclass(frozen=True)
class Hole:
    """A placeholder in a message; named holes become named groups."""

    name: str | None = None


@dataclass(frozen=True)
class Template:
    """A message with holes, as a raise site or a record writes it."""

    key: str
    parts: tuple[str | Hole, ...]

    @property
    def pattern(self) -> str:
        """Escaped literal text, ``(?P<name>.+?)`` for the first hole of each name, ``(.+?)``
        for the rest: what the harvester writes into messagePattern."""
        out, names = [], set()
        for part in self.parts:
            if isinstance(part, str):
                out.append(re.escape(part))
            elif part.name and part.name.isidentifier() and part.name not in names:
                names.add(part.name)
                out.append(f"(?P<{part.name}>.+?)")
            else:
                out.append("(.+?)")
        return "".join(out)

    @property
    def spans_lines(self) -> bool:
        return any(isinstance(part, str) and "\n" in part for part in self.parts)

    def sample(self, rng: random.Random) -> str:
        return "".join(p if isinstance(p, str) else rng.choice(FILLS) for p in self.parts)


def template(key: str, message: str) -> Template:
    """``"Unhandled config {key}={value} ({reason})"`` -> Template; ``{}`` is an unnamed hole."""
    parts: list[str | Hole] = []
    for i, piece in enumerate(re.split(r"\{(\w*)\}", message)):
        if i % 2:
            parts.append(Hole(piece or None))
        elif piece:
            parts.append(piece)
    return Template(key, tuple(parts))


_FORMAT_HOLE = re.compile(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfixgGeE]|\{[^{}]*\}")


def _message_parts(node: ast.expr) -> list[str | Hole] | None:
    """The message of ``raise X(<node>)`` as literal text and holes, for the forms raise sites
    use: a string, an f-string, ``"..." % args``, ``"...".format(...)`` and concatenations."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [
            value.value
            if isinstance(value, ast.Constant)
            else Hole(value.value.id if isinstance(value.value, ast.Name) else None)
            for value in node.values
        ]
    fmt = None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        fmt = node.left
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        fmt = node.func.value if node.func.attr == "format" else None
    if isinstance(fmt, ast.Constant) and isinstance(fmt.value, str):
        pieces = _FORMAT_HOLE.split(fmt.value)
        parts: list[str | Hole] = [pieces[0]]
        for piece in pieces[1:]:
            parts += [Hole(), piece]
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _message_parts(node.left), _message_parts(node.right)
        return left + right if left is not None and right is not None else None
    return None


def harvest_message_templates(root: Path, subpackages: tuple[str, ...] = ()) -> list[Template]:
    """One template per distinct message under ``root`` of ``raise X("...")``,
    ``assert cond, "..."`` and ``warnings.warn("...")``: what ends up in tracebacks and logs."""
    folders = [root / name for name in subpackages] or [root]
    found: dict[str, Template] = {}
    for path in sorted(p for folder in folders for p in folder.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            parts = _message_parts(message) if (message := _message_of(node)) else None
            literal = "".join(p for p in parts or () if isinstance(p, str))
            if len(literal.strip()) >= MIN_LITERAL_CHARS:
                key = f"{path.relative_to(root.parent)}:{node.lineno}"
                candidate = Template(key, tuple(p for p in parts if p != ""))
                found.setdefault(candidate.pattern, candidate)
    return list(found.values())


def _message_of(node: ast.AST) -> ast.expr | None:
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
        return node.exc.args[0]
    if isinstance(node, ast.Assert):
        return node.msg
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        return node.args[0] if node.func.attr == "warn" else None
    return None


def real_templates() -> list[Template]:
    """The messages of real raise sites: the installed torch's, or the service's own
    libraries' on a machine without torch."""
    if importlib.util.find_spec("torch") is None:
        return [t for name in SERVICE_PACKAGES for t in harvest_message_templates(_root(name))]
    return harvest_message_templates(_root("torch"), TORCH_SUBPACKAGES)


def _root(package: str) -> Path:
    return Path(importlib.import_module(package).__file__ or "").parent


SEEDS = [
    template(
        "cuda-vmm-no-occupied-slice", "CUDA VMM pool has no occupied slice at control offset {}"
    ),
    template(
        "data-buffer-full",
        "Not enough space in the data buffer, try calling free_buf() to free up space",
    ),
    template("unhandled-config", "Unhandled config {key}={value} ({reason})"),
]

_MESSAGES = [
    "CUDA out of memory. Tried to allocate {size} GiB. GPU {device} has a total capacity of {}",
    "The model's max seq len ({max_len}) is larger than the maximum number of tokens that can "
    "be stored in KV cache ({kv_tokens}). Try increasing `gpu_memory_utilization`",
    "NCCL error in: {file}:{line}, unhandled cuda error, NCCL version {version}",
    "Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!",
    "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
    "initializing the engine.",
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}) ran for "
    "{ms} milliseconds before timing out.",
    "Cannot use FlashAttention-2 backend for head size {head_size}.",
    "Prefill batch size {bs} exceeds the max running requests {max_running}",
    "Unsupported dtype {dtype} for quantization method {method}",
    "Tensor parallel size {tp} must divide the number of attention heads {heads}",
    "Engine core proc {name} died unexpectedly, shutting down client.",
    "RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered",
    "Failed to import {module}: {error}",
    "Request {request_id} was aborted after {seconds} s",
    "max_num_batched_tokens ({tokens}) is smaller than max_model_len ({len})",
    "CUDA error: device-side assert triggered",
    "radix cache: token {token} not found in tree node {node}",
    "mem_fraction_static={fraction} leaves {free} GB for activations",
    "Sliding window size {window} exceeds max context {context}",
    "Weight {name} has shape {shape} but the checkpoint has {other}",
]
_COMPONENTS = (
    "vLLM",
    "SGLang",
    "scheduler",
    "worker",
    "engine",
    "tokenizer",
    "sampler",
    "kv cache",
    "router",
    "detokenizer",
    "model runner",
    "cuda graph",
    "NCCL",
    "LoRA",
    "spec decode",
)


def generated_templates() -> list[Template]:
    """A few hundred record-like messages: each of the messages above as raised by several
    components (``[scheduler] ...``)."""
    return [
        template(f"gen-{i}-{j}", f"[{component}] {message}")
        for i, message in enumerate(_MESSAGES)
        for j, component in enumerate(_COMPONENTS)
    ] + [template(f"plain-{i}", message) for i, message in enumerate(_MESSAGES)]


def noise_line(rng: random.Random) -> str:
    """A line of what surrounds an error in a pasted log: frames, code, engine chatter."""
    return rng.choice(
        [
            f'  File "/usr/lib/python3.11/site-packages/vllm/worker/'
            f'runner_{rng.randint(1, 999)}.py", line {rng.randint(1, 3000)}, in execute_model',
            f"    hidden = self.model(input_ids=ids, positions=pos{rng.randint(0, 99)})",
            f"INFO 05-12 10:{rng.randint(10, 59)}:{rng.randint(10, 59)} [engine.py:"
            f"{rng.randint(1, 900)}] Avg prompt throughput: {rng.random() * 100:.1f} tokens/s, "
            f"GPU KV cache usage: {rng.random() * 100:.1f}%.",
            f"(VllmWorker rank={rng.randint(0, 7)} pid={rng.randint(100, 99999)}) "
            f"DEBUG 主机 ✓ step {rng.randint(0, 10**6)}",
            "    ~~~~~~~~~~~~~^^^^^^^^^^^^",
        ]
    )


def traceback_text(
    rng: random.Random, templates: list[Template], size: int = 5000, messages: int = 2
) -> str:
    """A fresh pasted traceback of about ``size`` characters ending in exceptions whose
    messages are drawn from ``templates``."""
    lines = ["Traceback (most recent call last):"]
    budget = size - 200 * messages
    while sum(map(len, lines)) < budget:
        lines.append(noise_line(rng))
    for chosen in rng.sample(templates, messages):
        error = rng.choice(["RuntimeError", "ValueError", "AssertionError"])
        lines.append(f"{error}: {chosen.sample(rng)}")
    return "\n".join(lines)


def naive_hits(templates: list[Template], text: str) -> tuple[set[tuple], set[str]]:
    """What the index must find, by brute force: every pattern searched with RE2 in every line
    (one hit per pattern and line, the first MAX_HITS_PER_KEY), and the keys of patterns that
    span lines."""
    line_hits: set[tuple] = set()
    multi_line: set[str] = set()
    for t in templates:
        if t.spans_lines:
            if _naive_regex(f"(?m){t.pattern}").search(text):
                multi_line.add(t.key)
            continue
        offset, found, regex = 0, [], _naive_regex(t.pattern)
        for line in text.split("\n"):
            if match := regex.search(line):
                found.append((t.key, offset + match.start(), offset + match.end()))
            offset += len(line) + 1
        line_hits.update(found[:MAX_HITS_PER_KEY])
    return line_hits, multi_line


@cache
def _naive_regex(pattern: str) -> Any:
    return re2.compile(pattern)


def hit_sets(hits: list[Hit], multi_keys: set[str]) -> tuple[set[tuple], set[str]]:
    return (
        {(h.key, h.start, h.end) for h in hits if h.key not in multi_keys},
        {h.key for h in hits if h.key in multi_keys},
    )


@pytest.fixture(scope="module")
def corpus() -> list[Template]:
    return SEEDS + generated_templates() + real_templates()


@pytest.fixture(scope="module", params=[*BACKENDS, "automaton"])
def index(request: pytest.FixtureRequest, corpus: list[Template]) -> PatternIndex:
    """Each backend; ``automaton`` is the portable one where Hyperscan is not installed (its
    literals found by Aho–Corasick), which a machine with Hyperscan would not test otherwise."""
    entries = ((t.key, t.pattern) for t in corpus)
    if request.param != "automaton":
        return PatternIndex(entries, backend=request.param)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(prefilter, "HYPERSCAN", False)
        return PatternIndex(entries, backend="portable")


LITERALS = ["cache", "KV cache", "on rank", "échec", "nul\x00byte", "k", "absent"]
LITERAL_TEXT = "échec: KV cache of rank 3 (nul\x00byte) ... the cache on rank 3"
"""Literals and a text with each kind the prefilter meets: overlapping ones, a non-ASCII one
and one with a NUL (both found by str.find beside Hyperscan), repeats and one not there."""


@pytest.mark.parametrize("scanner", ["hyperscan", "automaton"])
def test_literal_set_reports_each_literals_first_occurrence(
    scanner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if scanner == "hyperscan" and hyperscan is None:
        pytest.skip("hyperscan not installed")
    monkeypatch.setattr(prefilter, "HYPERSCAN", scanner == "hyperscan")
    literals = prefilter._LiteralSet(LITERALS)
    ends = literals.first_ends(LITERAL_TEXT, one_byte(LITERAL_TEXT))
    expected = {
        id_: LITERAL_TEXT.index(literal) + len(literal) - 1
        for id_, literal in enumerate(LITERALS)
        if literal in LITERAL_TEXT
    }
    assert ends == expected
    assert set(expected) == {0, 1, 2, 3, 4, 5}
    again = prefilter._LiteralSet(LITERALS, literals.blob())  # saved, then loaded
    assert again.first_ends(LITERAL_TEXT, one_byte(LITERAL_TEXT)) == expected
    stale = prefilter._LiteralSet(LITERALS, b"not a database")  # compiled afresh
    assert stale.first_ends(LITERAL_TEXT, one_byte(LITERAL_TEXT)) == expected


def small(backend: str, *templates: Template) -> PatternIndex:
    return PatternIndex(((t.key, t.pattern) for t in SEEDS + list(templates)), backend=backend)


def test_corpus_is_real_and_fully_indexed(corpus: list[Template], index: PatternIndex) -> None:
    assert len(corpus) > 1500
    assert index.rejected == {}
    assert len(index) == len(corpus)


def test_seed_case_full_match_captures_the_offset(index: PatternIndex) -> None:
    message = "CUDA VMM pool has no occupied slice at control offset 4096"
    text = f'Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: {message}\n'
    hit = next(h for h in index.candidates(text) if h.key == "cuda-vmm-no-occupied-slice")
    assert hit.start == text.index("CUDA VMM")
    assert text[hit.start : hit.end].startswith("CUDA VMM pool has no occupied slice at control")
    captures = index.match("cuda-vmm-no-occupied-slice", message, full=True)
    assert captures == Captures((0, len(message)), ("4096",), {})


def test_named_groups_by_name_and_literal_pattern_span(index: PatternIndex) -> None:
    line = "ValueError: Unhandled config max_model_len=4096 (exceeds the KV cache)"
    captures = index.match("unhandled-config", line)
    assert captures is not None
    assert captures.named == {
        "key": "max_model_len",
        "value": "4096",
        "reason": "exceeds the KV cache",
    }
    assert captures.groups == ("max_model_len", "4096", "exceeds the KV cache")
    message = "Not enough space in the data buffer, try calling free_buf() to free up space"
    text = f"noise\nRuntimeError: {message}\nmore noise"
    assert Hit("data-buffer-full", text.index("Not"), text.index("Not") + len(message)) in (
        index.candidates(text)
    )


def test_match_search_and_misses(index: PatternIndex) -> None:
    assert index.match("data-buffer-full", "no such message") is None
    assert (
        index.match(
            "cuda-vmm-no-occupied-slice",
            "x CUDA VMM pool has no occupied slice at control offset 7",
            full=True,
        )
        is None
    )
    with pytest.raises(KeyError):
        index.match("no-such-key", "text")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.text(max_size=6)),
        min_size=1,
        max_size=25,
    )
)
def test_no_false_negatives_against_a_naive_re2_loop(
    index: PatternIndex, corpus: list[Template], lines: list[tuple[int, int, str]]
) -> None:
    """Random texts of messages (with random fills and random text, non-ASCII included, before
    them) and noise: the index finds exactly what a naive RE2 loop finds, at the same spans."""
    parts = []
    for pick, seed, prefix in lines:
        rng = random.Random(seed)
        body = corpus[pick % len(corpus)].sample(rng) if pick % 3 else noise_line(rng)
        parts.append(prefix + body)
    text = "\n".join(parts)
    expected = naive_hits(corpus, text)
    multi_keys = {t.key for t in corpus if t.spans_lines}
    assert hit_sets(index.candidates(text), multi_keys) == expected


def test_fresh_tracebacks_match_the_naive_loop(index: PatternIndex, corpus: list[Template]) -> None:
    rng = random.Random(7)
    multi_keys = {t.key for t in corpus if t.spans_lines}
    for _ in range(5):
        text = traceback_text(rng, corpus)
        expected = naive_hits(corpus, text)
        assert expected[0] or expected[1]
        assert hit_sets(index.candidates(text), multi_keys) == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_spans_are_character_offsets_after_non_ascii_text(backend: str) -> None:
    index = small(backend, template("accented", "échec du cache {} → retry"))
    text = "日本語 ünïcødé ✓✓\n🙂 RuntimeError: CUDA VMM pool has no occupied slice at control "
    text += "offset 4096\nnoté: échec du cache kv → retry"
    hits = {h.key: h for h in index.candidates(text)}
    vmm = hits["cuda-vmm-no-occupied-slice"]
    assert vmm.start == text.index("CUDA")
    assert text[vmm.start : vmm.end] == "CUDA VMM pool has no occupied slice at control offset 4"
    accented = hits["accented"]
    assert text[accented.start : accented.end] == "échec du cache kv → retry"


@pytest.mark.parametrize("backend", BACKENDS)
def test_matching_is_per_line_unless_the_pattern_names_a_newline(backend: str) -> None:
    index = small(backend)
    index.add("spaces", r"expected (\S+)\s+got")
    index.add("anchored", r"^Error: (\w+)$")
    index.add("negated", r"size \[([^\]]+)\] mismatch")
    index.add("two-lines", template("two-lines", "first part {}\nsecond part").pattern)
    text = "expected a\ngot b\nsize [2,\n3] mismatch\nxx Error: one\nError: two\nfirst part x\n"
    text += "second part"
    found = [(h.key, text[h.start : h.end]) for h in index.candidates(text)]
    assert found == [("anchored", "Error: two"), ("two-lines", "first part x\nsecond part")]


@pytest.mark.perf
@pytest.mark.parametrize("backend", BACKENDS)
def test_crafted_lines_take_linear_time(backend: str) -> None:
    """Python's re needs seconds for the config pattern on such a line (bench/bench_index.py
    times it); RE2 and the prefilter stay linear."""
    index = small(backend)
    crafted = [
        "Unhandled config " + "a=b (" * 600,
        "Unhandled config " + "=" * 3000,
        "CUDA VMM pool has no occupied slice at control offset " + " " * 3000,
        "Not enough space in the data buffer, " * 80,
    ]
    started = time.perf_counter()
    for line in crafted:
        index.candidates(line)
        for key in (t.key for t in SEEDS):
            index.match(key, line)
            index.match(key, line, full=True)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_follows_writes(backend: str) -> None:
    index = small(backend)
    text = "RuntimeError: KV cache exhausted on rank 3\n"
    text += "CUDA VMM pool has no occupied slice at control offset 1"
    index.add("kv-exhausted", r"KV cache exhausted on rank (\d+)")
    assert {h.key for h in index.candidates(text)} == {"kv-exhausted", "cuda-vmm-no-occupied-slice"}
    index.rebuild()
    assert "kv-exhausted" in {h.key for h in index.candidates(text)}
    index.add("kv-exhausted", r"KV cache exhausted on node (\d+)")  # replaced
    index.remove("cuda-vmm-no-occupied-slice")
    index.remove("no-such-key")
    assert index.candidates(text) == []
    assert len(index) == 3
    with pytest.raises(PatternError):
        index.add("bad", r"(?<=x)y")
    assert "bad" not in index
    assert len(index) == 3
    index.rebuild()
    index.add("kv-exhausted", r"KV cache exhausted on rank (\d+)")
    assert [h.key for h in index.candidates(text)] == ["kv-exhausted"]
    assert index.match("kv-exhausted", "KV cache exhausted on rank 3", full=True).groups == ("3",)


@pytest.mark.parametrize("backend", BACKENDS)
def test_save_and_load_round_trip(backend: str, tmp_path: Path) -> None:
    index = small(backend, *generated_templates())
    index.add("pending", r"pending pattern (\d+)")
    index.remove("plain-0")
    path = tmp_path / "index.bin"
    index.save(path, "dataset-v1")
    loaded = PatternIndex.load(path, "dataset-v1", backend=backend)
    assert loaded is not None
    assert len(loaded) == len(index)
    rng = random.Random(3)
    templates = SEEDS + generated_templates()
    for _ in range(10):
        text = traceback_text(rng, templates, size=2000) + "\npending pattern 12"
        assert loaded.candidates(text) == index.candidates(text)
    assert PatternIndex.load(path, "dataset-v2", backend=backend) is None
    assert PatternIndex.load(tmp_path / "missing.bin", "dataset-v1", backend=backend) is None
    other = "portable" if backend == "hyperscan" else "hyperscan"
    if hyperscan is not None:
        assert PatternIndex.load(path, "dataset-v1", backend=other) is None


REFUSED = [
    (r"(\d+) and \1", "backreference \\N"),
    (r"(?P<n>\w+)=(?P=n)", "named backreference (?P=name)"),
    (r"offset(?= \d)", "lookahead (?=...)"),
    (r"offset(?! \d)", "negative lookahead (?!...)"),
    (r"(?<=CUDA )error", "lookbehind (?<=...)"),
    (r"(?<!CUDA )error", "negative lookbehind (?<!...)"),
    (r"(?>a+)b", "atomic group (?>...)"),
    (r"a*+b", "possessive quantifier (*+, ++, ?+, {m,n}+)"),
    (r"\d++", "possessive quantifier (*+, ++, ?+, {m,n}+)"),
    (r"x?+", "possessive quantifier (*+, ++, ?+, {m,n}+)"),
    (r"a{2,3}+", "possessive quantifier (*+, ++, ?+, {m,n}+)"),
    (r"(a)?(?(1)b|c)", "conditional (?(...)...)"),
    (r"end\Z", "RE2 syntax"),
    (r"unclosed (group", "RE2 syntax"),
]


@pytest.mark.parametrize(("pattern", "construct"), REFUSED)
def test_check_pattern_names_the_refused_construct(pattern: str, construct: str) -> None:
    with pytest.raises(PatternError) as raised:
        check_pattern(pattern)
    assert raised.value.construct == construct
    assert construct in str(raised.value)


@pytest.mark.parametrize(
    "pattern",
    [t.pattern for t in SEEDS] + [r"a+?b*?c??", r"[(?=]\\1 \(\?<=x\)", r"x{2}y{1,}z{,3}"],
)
def test_check_pattern_accepts_linear_patterns(pattern: str) -> None:
    check_pattern(pattern)


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_reports_refused_patterns_and_keeps_the_rest(backend: str) -> None:
    index = PatternIndex([("bad", r"(a)\1"), ("good", r"good (\w+)")], backend=backend)
    assert index.rejected["bad"].construct == "backreference \\N"
    assert [h.key for h in index.candidates("a good one")] == ["good"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_patterns_without_literal_are_confirmed_and_rank_last(backend: str) -> None:
    index = small(backend)
    index.add("anything", r"([a-z]+)")  # no literal; (.+?) alone is refused
    index.add("zip-code", r"\d{5}-\d{4}")
    index.rebuild()
    text = "\n".join(f"line {i}" for i in range(50))
    hits = index.candidates(text)
    assert {h.key for h in hits} == {"anything"}
    assert len(hits) == MAX_HITS_PER_KEY
    assert index.specificity("anything") == 0
    assert index.specificity("zip-code") == 1
    assert index.specificity("unhandled-config") == len("Unhandled config = ()")


@pytest.mark.parametrize("backend", BACKENDS)
def test_patterns_the_engine_refuses_still_match(backend: str) -> None:
    """Hyperscan refuses ``(?U)`` and is not given case-folding or non-ASCII patterns."""
    index = small(backend)
    for key, pattern in [
        ("ungreedy", r"(?U)retry after (\d+) s"),
        ("caseless", r"(?i)nccl timeout on rank (\d+)"),
        ("accented", r"dépassement de (\d+)"),
    ]:
        index.add(key, pattern)
    index.rebuild()
    text = "retry after 5 s\nNCCL Timeout on rank 2\ndépassement de 7"
    assert [h.key for h in index.candidates(text)] == ["ungreedy", "caseless", "accented"]


def test_auto_backend_is_the_portable_one() -> None:
    assert PatternIndex().backend == "portable"
    with pytest.raises(ValueError, match="unknown backend 'pcre'"):
        PatternIndex(backend="pcre")  # type: ignore[arg-type]


def test_hyperscan_compile_failure_falls_back_pattern_by_pattern() -> None:
    if hyperscan is None:
        pytest.skip("hyperscan not installed")
    entries = [pattern_entry("a", "alpha (\\d+)"), pattern_entry("b", "(?U)beta")]
    shard, refused = prefilter._compile_shard(entries, [0, 1])
    assert refused == [1]
    assert shard.ids == [0]
    assert shard.database is not None


# --- limits on patterns and on what one RE2 call reads -----------------------------

HOSTILE_PATTERNS = [
    ("(a)" * 2666, "program size"),  # 8.5 s on a 10 KB paste before the limit
    ("a.{300}b", "program size"),
    ("(x)" * (MAX_GROUPS + 1), "capturing groups"),
    (".*", "empty match"),
    ("^", "empty match"),
    ("(?:)", "empty match"),
    ("x*", "empty match"),
    (r"\b", "empty match"),
    ("error|", "empty match"),
    (r"\pN*", "empty match"),  # RE2-only syntax: found by trying sample lines
    ("(?s:.+?)", "catch-all"),
    (".", "catch-all"),
    (r"\D|\d", "catch-all"),
    (r"[^\n]+", "catch-all"),
    (r"\C", "any byte \\C"),
    (r"caf\C+", "any byte \\C"),
]


@pytest.mark.parametrize(("pattern", "limit"), HOSTILE_PATTERNS)
def test_hostile_patterns_are_refused_naming_the_limit(pattern: str, limit: str) -> None:
    with pytest.raises(PatternError) as raised:
        check_pattern(pattern)
    assert raised.value.construct == limit


def test_patterns_at_the_limits_are_accepted() -> None:
    check_pattern("(x)" * MAX_GROUPS)
    literal = "a" * 2000
    sizes = [n for n in range(1, 2000) if re2.compile(literal[:n]).programsize <= MAX_PROGRAM_SIZE]
    size = max(sizes)
    check_pattern(literal[:size])
    assert program_fits(literal[:size])
    with pytest.raises(PatternError, match="program size"):
        check_pattern(literal[: size + 1])
    assert not program_fits(literal[: size + 1])
    assert program_fits("(?<bad")  # not RE2 at all: check_pattern says what is wrong
    for pattern in (r"\d+", r"[A-Z]\w+Error", r"x\b", r"\pN+ items"):  # narrow, not catch-all
        check_pattern(pattern)


def test_a_stored_any_byte_pattern_is_left_out_and_non_ascii_pastes_still_match() -> None:
    index = PatternIndex([("any-byte", r"caf\C"), ("word", "café au lait")])
    assert set(index.rejected) == {"any-byte"}
    [hit] = index.candidates("un café au lait, merci\n")
    assert hit.key == "word"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_long_line_is_read_in_its_first_window_only(backend: str) -> None:
    index = PatternIndex([("needle", r"needle in \w+")], backend=backend)
    far = "é" * (MAX_SCAN_BYTES // 2) + " needle in hay"  # past the window: 2 bytes a char
    near = "needle in loft " + "é" * MAX_SCAN_BYTES
    text = "\n".join([far, "needle in barn", near])
    found = {text[h.start : h.end] for h in index.candidates(text)}
    assert found == {"needle in barn", "needle in loft"}


def test_windows_end_after_whole_lines_or_at_a_character_boundary() -> None:
    short = "x" * 100
    text = ScannedText.of("\n".join([short] * 1000))
    end = text.window_end(0)
    assert text.data[end : end + 1] == b"\n"
    assert MAX_SCAN_BYTES - 101 <= end <= MAX_SCAN_BYTES
    wide = ScannedText.of("é" * MAX_SCAN_BYTES)
    cut = wide.window_end(0)
    assert cut <= MAX_SCAN_BYTES
    assert cut % 2 == 0
    wide.data[:cut].decode("utf-8")  # no character cut in two


def test_a_long_subject_is_read_in_its_first_characters_only() -> None:
    index = PatternIndex([("key", r"bad value (\d+)")])
    subject = "bad value 7" + " pad" * MAX_SUBJECT_CHARS
    assert index.match("key", subject).groups == ("7",)
    assert index.match("key", subject, full=True) is None
    assert index.match("key", "x" * MAX_SUBJECT_CHARS + "bad value 7") is None


@settings(max_examples=60, deadline=None)
@given(pick=st.integers(0, 10**6), seed=st.integers(0, 10**6), before=st.text(max_size=8))
def test_groups_are_those_of_a_plain_re2_search(
    corpus: list[Template], pick: int, seed: int, before: str
) -> None:
    """The index finds a match's span without groups, then its groups on that span alone:
    the same groups as RE2 searching with them from the start."""
    item = corpus[pick % len(corpus)]
    subject = before + item.sample(random.Random(seed))
    index = PatternIndex([(item.key, item.pattern)])
    expected = re2.compile(item.pattern).search(subject)
    found = index.match(item.key, subject)
    assert (found is None) == (expected is None)
    if found is not None:
        assert found.span == expected.span()
        assert found.groups == expected.groups()
        assert found.named == expected.groupdict()


@pytest.mark.parametrize(
    ("pattern", "subject"),
    [
        (r"\Q(\Ex(y)", "a (xy b"),  # a parenthesis inside \Q...\E is text
        (r"[(](a)\((b)\)", "x (a(b) y"),
        (r"(?P<n>\d+) of (?<m>\d+)", "item 3 of 7"),
        (r"(?i)(warn|error): (.+)", "ERROR: disk full"),
        (r"\Q(plain)\E", "a (plain) b"),
    ],
)
def test_spans_without_groups_keep_the_meaning(pattern: str, subject: str) -> None:
    index = PatternIndex([("key", pattern)])
    expected = re2.compile(pattern).search(subject)
    found = index.match("key", subject)
    assert (found.span, found.groups) == (expected.span(), expected.groups())
    [hit] = index.candidates(subject)
    assert (hit.start, hit.end) == expected.span()
