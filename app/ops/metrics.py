"""Prometheus metrics of one app, in its own registry.

Each app owns a `Metrics` (tests build many apps in one process, and nothing is registered
at import time). `RequestObserver` feeds the request metrics; matching, hits and start-up feed
theirs; the index size and the dataset version are read when /metrics is scraped. With several
worker processes each answers for itself: scrape each one, or run one worker per container.
"""

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    generate_latest,
)

# Latency buckets in seconds, from a match (the fastest) and a page to an import or a 1 MB log
# (bench/bench_store.py --sections latency).
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
MATCH_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
CONTENT_TYPE = CONTENT_TYPE_LATEST


class Metrics:
    """The metrics errkb exports, each documented by its help text."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "errkb_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "errkb_http_request_duration_seconds",
            "Time from the request's arrival to the end of its response, by route and method.",
            ["route", "method"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self.match_seconds = Histogram(
            "errkb_match_seconds",
            "Time to match one pasted text (clean, parse, index, rank).",
            buckets=MATCH_BUCKETS,
            registry=registry,
        )
        self.hits = Counter(
            "errkb_hits",
            "Hits counted: kind record or template, source match or view.",
            ["kind", "source"],
            registry=registry,
        )
        self.index_patterns = Gauge(
            "errkb_index_patterns",
            "Patterns in the match index (0 until loaded).",
            registry=registry,
        )
        self.index_build_seconds = Gauge(
            "errkb_index_build_seconds",
            "Seconds the match index took to build, or to load from its cache, at start-up.",
            registry=registry,
        )
        self.dataset = Info("errkb_dataset", "The dataset version being served.", registry=registry)

    def exposition(self, dataset_version: str, index_patterns: int) -> bytes:
        """The text format of every metric, the scrape-time ones brought up to date first."""
        self.dataset.info({"version": dataset_version})
        self.index_patterns.set(index_patterns)
        return generate_latest(self.registry)
