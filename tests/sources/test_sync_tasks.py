"""The sync tasks: the job task takes an id and is idempotent, and the periodic
task queues a sync of every source due (off when the setting is 0)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.choices import JobKind, JobState
from jobs.models import Job
from sources import tasks
from sources.models import Source

pytestmark = pytest.mark.django_db


def test_the_task_runs_the_job_once_and_again_changes_nothing(make_source, upstream):
    source = make_source(upstream.url)
    from sources.services import start_sync

    job = start_sync(source, actor=None)
    tasks.run_sync(job.pk)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.counts["created"] == 7

    tasks.run_sync(job.pk)  # a finished job is not claimed again
    tasks.run_sync(999_999)  # a job that is gone: quietly nothing
    assert Job.objects.get(pk=job.pk).counts == job.counts


def test_a_sync_job_whose_source_was_deleted_fails_naming_it(make_source, upstream):
    source = make_source(upstream.url)
    from sources.services import start_sync

    job = start_sync(source, actor=None)
    Source.objects.filter(pk=source.pk).delete()
    tasks.run_sync(job.pk)
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "deleted" in job.errors[0]


def first_syncs_done() -> None:
    """Adding a source queued its first sync; these tests are about later ones."""
    Job.objects.filter(kind=JobKind.SYNC).update(state=JobState.SUCCEEDED)


def test_periodic_sync_is_off_by_default(make_source, upstream, settings):
    make_source(upstream.url)
    first_syncs_done()
    settings.QUIVER_SOURCE_SYNC_MINUTES = 0
    assert tasks.sync_due_sources() == 0
    assert not Job.objects.filter(kind=JobKind.SYNC, state=JobState.QUEUED).exists()


def test_periodic_sync_queues_the_sources_that_are_due_once(
    make_source, upstream, settings
):
    settings.QUIVER_SOURCE_SYNC_MINUTES = 30
    due = make_source(upstream.url)
    fresh = make_source(upstream.url, name="fresh")
    first_syncs_done()
    Source.objects.filter(pk=fresh.pk).update(last_synced=timezone.now())
    Source.objects.filter(pk=due.pk).update(
        last_synced=timezone.now() - timedelta(minutes=31)
    )

    assert tasks.sync_due_sources() == 1
    assert tasks.sync_due_sources() == 1  # the same waiting job, not a second

    jobs = Job.objects.filter(kind=JobKind.SYNC, state=JobState.QUEUED)
    assert [job.options["source_id"] for job in jobs] == [due.pk]
