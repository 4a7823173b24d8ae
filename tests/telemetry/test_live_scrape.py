"""A real scrape: gunicorn in multiprocess mode (PROMETHEUS_MULTIPROC_DIR, as make
run and the image run it) behind a real selection and a real call to an upstream
MCP server, parsed by prometheus_client's own text parser; then a real Celery
worker sharing the directory (make run) and serving its own port (Docker); and
the Grafana dashboard's every metric found in that scrape."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from sources.models import Source, SourceStatus
from tests.calls.conftest import link_source
from tests.conftest import start_worker, stop_worker, wait_until, worker_env
from tests.factories import make_client_key
from tests.outages import running_web
from tests.upstream import Upstream, free_port

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "quiver.json"
TOKEN = "scrape-token-live-0123456789"
# Values a caller sends: none may appear in any metric name or label.
SECRET_CITY = "Zanzibar-7f3a9c"
SECRET_QUERY = "forecast for the 9b21e4 expedition"


@pytest.fixture(scope="module")
def metrics_dir(tmp_path_factory: Any) -> Path:
    return tmp_path_factory.mktemp("prometheus-multiproc")


@pytest.fixture(scope="module")
def web(
    django_db_setup: None, django_db_blocker: Any, metrics_dir: Path
) -> Iterator[str]:
    env = {
        **worker_env(),
        "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
        "QUIVER_METRICS_TOKEN": TOKEN,
    }
    with running_web(env, "metrics") as url:
        yield url


@pytest.fixture
def http(transactional_db: None, web: str, module_upstream: Upstream) -> Iterator:
    link_source(module_upstream)
    with httpx.Client(base_url=web, timeout=60) as client:
        yield client


def scrape(http: httpx.Client, token: str = TOKEN) -> dict[tuple[str, tuple], float]:
    response = http.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return parse(response.text)


def parse(text: str) -> dict[tuple[str, tuple], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict, name: str, **labels: str) -> float:
    """A sample's value (0 when the series does not exist yet)."""
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def matching(found: dict, name: str, **labels: str) -> list[tuple[dict, float]]:
    return [
        (dict(key), sample)
        for (sample_name, key), sample in found.items()
        if sample_name == name and labels.items() <= dict(key).items()
    ]


def test_a_selection_and_a_call_move_their_counters(http, module_upstream):
    agent = {"Authorization": f"Bearer {make_client_key('agent', 'agent')}"}
    before = scrape(http)
    chosen = http.post("/api/v1/select", json={"query": SECRET_QUERY}, headers=agent)
    assert chosen.status_code == 200, chosen.text
    call = {"name": "weather.get_forecast", "arguments": {"city": SECRET_CITY}}
    ran = http.post("/api/v1/tool-calls/execute", json=call, headers=agent)
    assert ran.status_code == 200 and ran.json()["outcome"] == "ran", ran.text
    asked = {"name": "weather.delete_file", "arguments": {"path": "/tmp/x"}}
    pending = http.post("/api/v1/tool-calls/execute", json=asked, headers=agent)
    assert pending.status_code == 202, pending.text
    after = scrape(http)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    select = {"route": "/api/v1/select", "method": "POST"}
    assert moved("quiver_http_requests_total", status="200", **select) == 1
    assert moved("quiver_http_request_duration_seconds_count", **select) == 1
    [(labels, _)] = [
        (labels, n)
        for labels, n in matching(after, "quiver_selections_total", catalog="default")
        if n - value(before, "quiver_selections_total", **labels) == 1
    ]
    assert labels["channel"] == "api" and labels["scorer"]
    weather = {"source": "default/weather"}
    assert moved("quiver_tool_calls_total", outcome="ran", **weather) == 1
    assert moved("quiver_tool_calls_total", outcome="pending", **weather) == 1
    upstream = {"outcome": "ran", **weather}
    assert moved("quiver_tool_call_upstream_duration_seconds_count", **upstream) == 1
    assert value(after, "quiver_approvals_pending") >= 1
    assert value(after, "quiver_audit_unsealed_events") >= 0
    assert value(after, "quiver_metrics_database_up") == 1
    # Tracing is off in this server: nothing went into the upstream's _meta.
    assert "traceparent" not in module_upstream.calls_to("get_forecast")[-1].meta


def test_labels_hold_route_patterns_and_never_what_a_caller_sent(http):
    agent = {"Authorization": f"Bearer {make_client_key('reader', 'curator')}"}
    tool = http.get("/api/v1/tools/", headers=agent).json()["results"][0]
    assert http.get(f"/api/v1/tools/{tool['id']}", headers=agent).status_code == 200
    http.get("/no/such/page/8c41")
    text = http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    found = parse(text)
    counted = matching(found, "quiver_http_requests_total")
    routes = {labels["route"] for labels, _ in counted}
    assert "/api/v1/tools/<pk>/" in routes
    assert "unmatched" in routes
    assert not [route for route in routes if re.search(r"/\d+", route)]
    for secret in (SECRET_CITY, "9b21e4", "8c41", agent["Authorization"][7:]):
        assert secret not in text


def test_each_live_process_reports_its_memory_and_start(http):
    found = scrape(http)
    web = matching(found, "quiver_process_resident_memory_bytes", role="web")
    assert web and all(bytes_ > 10_000_000 for _, bytes_ in web)
    assert matching(found, "quiver_process_start_time_seconds", role="web")


def test_a_worker_s_metrics_reach_the_web_s_scrape_and_its_own_port(
    http, metrics_dir, purged_broker
):
    """make run: the worker shares the web's directory, so the web's /metrics
    holds its tasks and memory. Docker: its own port serves them, for the token,
    without the database's gauges (summed over targets they would count twice).
    With a worker's series in, every metric the Grafana dashboard queries is in
    this real scrape."""
    port = free_port()
    worker = start_worker(
        "metrics",
        {
            "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir),
            "QUIVER_METRICS_TOKEN": TOKEN,
            "QUIVER_WORKER_METRICS_PORT": str(port),
        },
    )
    try:
        # A starting worker sends itself a resume and a sweep every few seconds.
        found = wait_until(
            lambda: _worker_counted(scrape(http)), timeout=60, what="worker tasks"
        )
        assert matching(found, "quiver_process_resident_memory_bytes", role="worker")
        own = f"http://127.0.0.1:{port}/metrics"
        assert httpx.get(own, timeout=10).status_code == 401
        wrong = {"Authorization": f"Bearer {TOKEN}x"}
        assert httpx.get(own, headers=wrong, timeout=10).status_code == 401
        answer = httpx.get(own, headers={"Authorization": f"Bearer {TOKEN}"})
        assert answer.status_code == 200
        served = parse(answer.text)
        assert matching(served, "quiver_celery_tasks_total")
        assert not matching(served, "quiver_approvals_pending")
        _every_dashboard_metric_is_scraped(http)
    finally:
        stop_worker(worker)


def _worker_counted(found: dict) -> dict | None:
    done = matching(found, "quiver_celery_tasks_total", state="success")
    return found if done else None


def _every_dashboard_metric_is_scraped(http: httpx.Client) -> None:
    """Each kind of answer once (a cache hit, a fallback, no tool), a source with
    a good sync, then the dashboard's names against the scrape's."""
    Source.objects.update(status=SourceStatus.OK, last_success=timezone.now())
    agent = {"Authorization": f"Bearer {make_client_key('agent-d', 'agent')}"}
    for body in (
        {"query": "weather in Oslo"},
        {"query": "weather in Oslo"},  # the same again: from the cache
        {"query": "weather in Oslo", "timeout_ms": 0},  # ranked by a fallback
        {"query": "qqqq zzzz xxxx"},  # nothing fits
    ):
        assert http.post("/api/v1/select", json=body, headers=agent).status_code == 200
    scraped = {name for name, _ in scrape(http)}
    missing = sorted(dashboard_metric_names() - scraped)
    assert not missing, f"the dashboard queries metrics no scrape has: {missing}"


def dashboard_metric_names() -> set[str]:
    """Every quiver_* series name a panel of the dashboard queries."""
    board = json.loads(DASHBOARD.read_text())
    exprs = [
        target["expr"]
        for panel in board["panels"]
        for target in panel.get("targets", [])
    ]
    assert exprs
    return {name for expr in exprs for name in re.findall(r"\bquiver_\w+", expr)}
