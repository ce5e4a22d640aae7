"""`/metrics` of the real server, parsed by the Prometheus project's own
Python parsers: the text format 0.0.4 (default) and OpenMetrics 1.0 (the
strict one: it refuses duplicate series, bad histograms, a missing EOF)."""

from __future__ import annotations

import uuid

import httpx
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

import mnemo

STAGES = {"embed", "lexical", "vector", "fuse", "hydrate", "rank"}


def scrape(server, openmetrics: bool = False) -> httpx.Response:
    headers = {"authorization": f"Bearer {server.admin}"}
    if openmetrics:
        headers["accept"] = "application/openmetrics-text; version=1.0.0"
    response = httpx.get(f"{server.base_url}/metrics", headers=headers, timeout=30)
    response.raise_for_status()
    return response


def families(text: str):
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(family, name=None, **labels):
    return [
        s
        for s in family.samples
        if (name is None or s.name == name) and all(s.labels.get(k) == v for k, v in labels.items())
    ]


def test_metric_families_parse_and_carry_the_service_figures(server, client: mnemo.Client):
    user = f"metrics-{uuid.uuid4().hex[:8]}"
    client.add("Metrics user likes rooibos", user_id=user, refresh=True)
    client.search("rooibos", user_id=user)
    before = families(scrape(server).text)
    erased_before = samples(before["mnemo_erasures"], "mnemo_erasures_total")[0].value
    client.forget_user(user)

    response = scrape(server)
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    fams = families(response.text)
    for name, kind in {
        "mnemo_http_requests": "counter",
        "mnemo_http_request_duration_seconds": "histogram",
        "mnemo_search_duration_seconds": "histogram",
        "mnemo_search_stage_duration_seconds": "histogram",
        "mnemo_erasures": "counter",
        "mnemo_job_runs": "counter",
        "mnemo_memories": "gauge",
        "mnemo_embedding_queue_depth": "gauge",
        "mnemo_api_keys_active": "gauge",
        "mnemo_job_running": "gauge",
        "mnemo_index_lag_changes": "gauge",
        "mnemo_uptime_seconds": "gauge",
    }.items():
        assert name in fams, f"{name} missing; have {sorted(fams)}"
        assert fams[name].type == kind, name

    stage_counts = {
        s.labels["stage"]: s.value
        for s in samples(fams["mnemo_search_stage_duration_seconds"], "mnemo_search_stage_duration_seconds_count")
    }
    assert set(stage_counts) == STAGES and all(v >= 1 for v in stage_counts.values())
    searches = samples(
        fams["mnemo_http_requests"], "mnemo_http_requests_total", method="POST", route="/v1/search", status="200"
    )
    assert searches and searches[0].value >= 1
    assert samples(fams["mnemo_erasures"], "mnemo_erasures_total")[0].value == erased_before + 1
    runs = {(s.labels["job"], s.labels["outcome"]) for s in fams["mnemo_job_runs"].samples}
    assert {("ttl-sweep", "completed"), ("weekly-cleanup", "failed")} <= runs
    assert samples(fams["mnemo_api_keys_active"])[0].value == 3
    assert samples(fams["mnemo_index_lag_changes"])[0].value == 0, "one node: no feed to follow"
    tiers = {s.labels["tier"] for s in fams["mnemo_memories"].samples}
    assert "long_term" in tiers


def test_openmetrics_on_request(server):
    response = scrape(server, openmetrics=True)
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")
    names = {f.name for f in openmetrics_families(response.text)}
    assert {"mnemo_http_requests", "mnemo_search_stage_duration_seconds", "mnemo_job_runs"} <= names


def test_invented_methods_and_paths_do_not_grow_the_exposition(server):
    auth = {"authorization": f"Bearer {server.agent}"}
    with httpx.Client(base_url=server.base_url, headers=auth, timeout=30) as http:
        for i in range(300):
            http.request(f"BREW{i}", "/v1/search")
            http.get(f"/v1/no-such-route/{uuid.uuid4()}")
    text = scrape(server).text
    fams = families(text)
    methods = {s.labels["method"] for s in samples(fams["mnemo_http_requests"], "mnemo_http_requests_total")}
    assert methods <= {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "other"}
    other = samples(fams["mnemo_http_requests"], "mnemo_http_requests_total", method="other", route="/v1/search")
    assert len(other) == 1 and other[0].value >= 300
    unmatched = samples(fams["mnemo_http_requests"], "mnemo_http_requests_total", route="unmatched")
    assert len(unmatched) == 1 and unmatched[0].value >= 300
    routes = {s.labels["route"] for s in samples(fams["mnemo_http_requests"], "mnemo_http_requests_total")}
    assert not any("no-such-route" in r for r in routes)
    assert len(text) < 256 * 1024, f"{len(text)} bytes"
