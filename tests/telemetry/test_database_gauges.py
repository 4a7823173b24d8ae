"""The gauges read from the database at scrape time: what waits (approvals, audit
rows, jobs, embeddings) and each source's state, in two statements."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from audit.sealing import seal_pending
from calls.models import Approval, ApprovalStatus
from catalog.choices import EmbeddingStatus
from catalog.models import Tool
from catalog.services import create_catalog, ensure_default_catalog
from jobs.choices import JobKind, JobState
from jobs.models import Job
from learning.models import Evaluation, EvaluationState, LearntModel
from sources.models import Source, SourceStatus
from telemetry.collector import DatabaseCollector
from telemetry.exposition import render
from tests.calls.approval_rows import make_approval, record_call
from tests.factories import make_tool, make_user

pytestmark = pytest.mark.django_db


def values(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, for every sample of a scrape."""
    found = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def gauge(found: dict, name: str, **labels: str) -> float:
    return found[(name, tuple(sorted(labels.items())))]


def test_an_empty_database_waits_for_nothing():
    Tool.objects.all().delete()
    found = values(render())
    assert gauge(found, "quiver_metrics_database_up") == 1
    assert gauge(found, "quiver_approvals_pending") == 0
    assert gauge(found, "quiver_approval_oldest_pending_age_seconds") == 0
    for queue in ("quiver", "learning"):
        assert gauge(found, "quiver_jobs", queue=queue, state="queued") == 0
        assert gauge(found, "quiver_job_oldest_queued_age_seconds", queue=queue) == 0
    assert gauge(found, "quiver_tool_embeddings_pending") == 0


def test_pending_approvals_are_counted_with_the_oldest_one_s_age():
    person = make_user("requester")
    old = make_approval(person)
    Approval.objects.filter(pk=old.pk).update(
        created=timezone.now() - timedelta(minutes=10)
    )
    make_approval(person, arguments={"path": "/tmp/other"})
    make_approval(person, arguments={"path": "/tmp/done"}, status=ApprovalStatus.USED)
    found = values(render())
    assert gauge(found, "quiver_approvals_pending") == 2
    age = gauge(found, "quiver_approval_oldest_pending_age_seconds")
    assert 600 <= age < 3600


def test_unsealed_audit_rows_and_the_seal_lag_go_to_zero_once_sealed():
    person = make_user("caller")
    for _ in range(3):
        record_call(person)
    found = values(render())
    assert gauge(found, "quiver_audit_unsealed_events") >= 3
    assert gauge(found, "quiver_audit_seal_lag_seconds") >= 0
    seal_pending()
    found = values(render())
    assert gauge(found, "quiver_audit_unsealed_events") == 0
    assert gauge(found, "quiver_audit_seal_lag_seconds") == 0


def test_queued_and_running_jobs_and_the_oldest_queued_one():
    catalog = ensure_default_catalog()
    old = Job.objects.create(kind=JobKind.IMPORT, catalog=catalog)
    Job.objects.filter(pk=old.pk).update(created=timezone.now() - timedelta(hours=2))
    Job.objects.create(kind=JobKind.REINDEX, catalog=catalog)
    Job.objects.create(kind=JobKind.IMPORT, catalog=catalog, state=JobState.RUNNING)
    Job.objects.create(kind=JobKind.IMPORT, catalog=catalog, state=JobState.FAILED)
    found = values(render())
    assert gauge(found, "quiver_jobs", queue="quiver", state="queued") == 2
    assert gauge(found, "quiver_jobs", queue="quiver", state="running") == 1
    age = gauge(found, "quiver_job_oldest_queued_age_seconds", queue="quiver")
    assert 7200 <= age < 7200 * 2
    assert gauge(found, "quiver_jobs", queue="learning", state="queued") == 0


def test_evaluations_and_learns_are_the_learning_queue():
    catalog = ensure_default_catalog()
    waiting = Evaluation.objects.create(catalog=catalog)
    Evaluation.objects.filter(pk=waiting.pk).update(
        created=timezone.now() - timedelta(minutes=30)
    )
    Evaluation.objects.create(catalog=catalog, state=EvaluationState.RUNNING)
    Evaluation.objects.create(catalog=catalog, state=EvaluationState.SUCCEEDED)
    LearntModel.objects.create(catalog=catalog, version=1)
    found = values(render())
    assert gauge(found, "quiver_jobs", queue="learning", state="queued") == 2
    assert gauge(found, "quiver_jobs", queue="learning", state="running") == 1
    age = gauge(found, "quiver_job_oldest_queued_age_seconds", queue="learning")
    assert 1800 <= age < 3600


def test_tools_waiting_for_their_embedding():
    Tool.objects.all().delete()
    make_tool(name="a_tool")
    make_tool(name="b_tool")
    ready = make_tool(name="c_tool")
    Tool.objects.filter(pk=ready.pk).update(embedding_status=EmbeddingStatus.READY)
    assert gauge(values(render()), "quiver_tool_embeddings_pending") == 2


def test_each_source_s_status_and_last_success_and_the_totals(settings):
    other = create_catalog("ops", "Ops", actor=None)
    when = timezone.now() - timedelta(hours=3)
    Source.objects.create(
        catalog=ensure_default_catalog(),
        name="weather",
        url="http://127.0.0.1:9/mcp",
        status=SourceStatus.OK,
        last_success=when,
    )
    Source.objects.create(
        catalog=other, name="weather", url="http://127.0.0.1:9/mcp", status="error"
    )
    found = values(render())
    assert (
        gauge(
            found,
            "quiver_source_status",
            catalog="default",
            source="weather",
            status="ok",
        )
        == 1
    )
    assert (
        gauge(
            found, "quiver_source_status", catalog="ops", source="weather", status="ok"
        )
        == 0
    )
    assert (
        gauge(
            found,
            "quiver_source_status",
            catalog="ops",
            source="weather",
            status="error",
        )
        == 1
    )
    stamp = gauge(
        found,
        "quiver_source_last_success_timestamp_seconds",
        catalog="default",
        source="weather",
    )
    assert stamp == pytest.approx(when.timestamp())
    # Never succeeded: no timestamp at all (not 0, which would read as 1970).
    assert not [
        key
        for key in found
        if key[0] == "quiver_source_last_success_timestamp_seconds"
        and ("catalog", "ops") in key[1]
    ]
    assert gauge(found, "quiver_sources", status="error") == 1
    assert gauge(found, "quiver_sources", status="ok") == 1


def test_sources_past_the_label_cap_are_still_in_the_totals(settings):
    settings.QUIVER_METRICS_MAX_LABEL_VALUES = 2
    catalog = ensure_default_catalog()
    for n in range(5):
        Source.objects.create(
            catalog=catalog, name=f"s{n}", url="http://127.0.0.1:9/mcp", status="error"
        )
    found = values(render())
    named = {
        dict(key[1])["source"] for key in found if key[0] == "quiver_source_status"
    }
    assert named == {"s0", "s1"}
    assert gauge(found, "quiver_sources", status="error") == 5


def test_the_collector_reads_the_database_in_two_statements(
    django_assert_num_queries,
):
    with django_assert_num_queries(2):
        list(DatabaseCollector().collect())
