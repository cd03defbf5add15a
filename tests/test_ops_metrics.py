"""/metrics in the Prometheus text format, read back with prometheus-client's own parser:
requests by route and status, durations, match time, hits, index size, dataset version."""

from prometheus_client.parser import text_string_to_metric_families

from tests.helpers.records import DATA_DIR, curated_records

SEED_002 = "edc4df790b100979"
PASTE = (
    "Traceback (most recent call last):\n"
    "RuntimeError: CUDA VMM pool has no occupied slice at control offset 4096\n"
)


def _samples(client) -> dict[str, list]:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def _value(samples, name: str, **labels: str) -> float:
    found = [s.value for s in samples[name] if labels.items() <= s.labels.items()]
    assert len(found) == 1, (name, labels, samples.get(name))
    return found[0]


def test_metrics_count_requests_matches_hits_and_describe_the_dataset(make_client) -> None:
    client = make_client(DATA_DIR, max_body_bytes=1000)
    assert client.post("/api/match", json={"text": PASTE}).status_code == 200
    assert client.get(f"/errors/{SEED_002}").status_code == 200
    assert client.get("/errors/0000000000000000").status_code == 404
    assert client.put(f"/api/errors/{SEED_002}", content=b"x" * 2000).status_code == 413
    assert client.get("/static/style.css").status_code == 200
    version = client.get("/api/stats").json()["datasetVersion"]

    samples = _samples(client)
    requests = "errkb_http_requests_total"
    assert _value(samples, requests, route="/api/match", method="POST", status="200") == 1
    assert _value(samples, requests, route="/errors/{record_id}", status="200") == 1
    assert _value(samples, requests, route="/errors/{record_id}", status="404") == 1
    assert _value(samples, requests, route="unmatched", method="PUT", status="413") == 1
    assert _value(samples, requests, route="/static", status="200") == 1
    count = "errkb_http_request_duration_seconds_count"
    assert _value(samples, count, route="/api/match", method="POST") == 1
    assert _value(samples, "errkb_http_request_duration_seconds_sum", route="/api/match") > 0
    assert _value(samples, "errkb_match_seconds_count") == 1
    assert _value(samples, "errkb_match_seconds_bucket", le="+Inf") == 1
    assert _value(samples, "errkb_hits_total", kind="record", source="match") == 1
    assert _value(samples, "errkb_hits_total", kind="record", source="view") == 1
    # loaded by the match: one pattern per record of data/
    assert _value(samples, "errkb_index_patterns") == len(curated_records())
    assert _value(samples, "errkb_dataset_info", version=version) == 1


def test_every_response_echoes_a_request_id(client) -> None:
    mine = client.get("/healthz", headers={"X-Request-ID": "lb-7f3a.2:1"})
    assert mine.headers["x-request-id"] == "lb-7f3a.2:1"
    made = client.get("/healthz", headers={"X-Request-ID": "has spaces\tand tabs"})
    assert made.headers["x-request-id"] != "has spaces\tand tabs"
    assert len(made.headers["x-request-id"]) == 32
    assert client.get("/nope").headers["x-request-id"] != made.headers["x-request-id"]
