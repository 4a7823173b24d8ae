"""Adding a source queues its first sync (issue 31): over the API, the console
and the stdio command, in the same transaction as the source, sent to the workers
on commit, and named in the answer so the person can follow it; a source refused
queues nothing. With a real worker the tools appear without a second step."""

from __future__ import annotations

import json
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from catalog.models import Tool
from jobs.choices import JobKind, JobState
from jobs.models import Job
from sources.models import Source, SourceStatus
from tests.conftest import start_worker, stop_worker, wait_until

SOURCES = "/api/v1/catalogs/default/sources"
STDIO_UPSTREAM = str(Path(__file__).resolve().parents[1] / "stdio_upstream.py")


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...]]]:
    """The tasks sent to the broker by name, instead of sending them."""
    names: list[tuple[str, tuple[Any, ...]]] = []

    def send(name: str, *args: Any, priority: int | None = None) -> bool:
        names.append((name, args))
        return True

    monkeypatch.setattr("jobs.services.send", send)
    return names


def sync_jobs() -> list[Job]:
    return list(Job.objects.filter(kind=JobKind.SYNC).order_by("pk"))


@pytest.mark.django_db
def test_adding_a_source_over_the_api_names_its_queued_first_sync(
    admin_api, upstream, sent, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        answer = admin_api.post(
            SOURCES, {"name": "weather", "url": upstream.url}, format="json"
        )

    assert answer.status_code == 201, answer.json()
    data = answer.json()
    [job] = sync_jobs()
    assert data["sync_job"]["id"] == job.pk
    assert data["sync_job"]["kind"] == "sync" and data["sync_job"]["state"] == "queued"
    assert job.options["source_id"] == data["id"]
    assert data["status"] == SourceStatus.SYNCING
    assert sent == [("sources.tasks.run_sync", (job.pk,))]
    followed = admin_api.get(f"/api/v1/jobs/{job.pk}/")
    assert followed.status_code == 200 and followed.json()["state"] == "queued"


@pytest.mark.django_db
def test_sync_now_right_after_adding_returns_the_queued_first_sync(admin_api, upstream):
    data = admin_api.post(
        SOURCES, {"name": "weather", "url": upstream.url}, format="json"
    ).json()

    again = admin_api.post(f"/api/v1/sources/{data['id']}/sync").json()

    assert again["id"] == data["sync_job"]["id"]
    assert len(sync_jobs()) == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bad",
    [
        {"name": "Bad_Name"},
        {"url": "http://169.254.169.254/mcp"},
        {"kind": "stdio"},
        {"timeout_seconds": 3600},
    ],
)
def test_a_source_refused_queues_no_sync(admin_api, upstream, sent, bad):
    given = {"name": "weather", "url": upstream.url, **bad}
    answer = admin_api.post(SOURCES, given, format="json")
    assert answer.status_code == 400, answer.json()
    assert not Source.objects.exists()
    assert not sync_jobs() and not sent


@pytest.mark.django_db
def test_the_console_says_the_first_sync_is_queued_and_links_its_job(
    client, admin_user, upstream
):
    client.force_login(admin_user)
    answer = client.post(
        "/catalogs/default/sources/",
        {"name": "weather", "url": upstream.url, "timeout_seconds": "10"},
        follow=True,
    )

    [job] = sync_jobs()
    page = answer.content.decode()
    assert f"its first sync is queued (job #{job.pk}" in page
    assert f'href="/jobs/{job.pk}/"' in page


@pytest.mark.django_db
def test_the_stdio_command_prints_the_queued_job(tmp_path, settings, catalog):
    entry = {"command": sys.executable, "args": [STDIO_UPSTREAM]}
    (tmp_path / "sources.json").write_text(json.dumps({"stdio": {"local": entry}}))
    settings.QUIVER_SOURCES_FILE = str(tmp_path / "sources.json")
    out = StringIO()

    call_command("add_stdio_source", "default", "local", stdout=out)

    [job] = sync_jobs()
    assert f"its first sync is queued as job {job.pk}" in out.getvalue()
    assert job.options["source_id"] == Source.objects.get().pk


def synced_tools(prefix: str) -> list[str]:
    return sorted(
        Tool.objects.filter(name__startswith=prefix).values_list("name", flat=True)
    )


def finished(job_id: int) -> Job | None:
    job = Job.objects.get(pk=job_id)
    return job if job.state in (JobState.SUCCEEDED, JobState.FAILED) else None


@pytest.mark.integration
def test_with_a_real_worker_the_tools_appear_after_adding_alone(
    transactional_db, purged_broker, upstream, admin_user, api, tmp_path
):
    """An HTTP source over the API and a stdio one by the command: no sync asked."""
    entry = {"command": sys.executable, "args": [STDIO_UPSTREAM]}
    (tmp_path / "sources.json").write_text(json.dumps({"stdio": {"local": entry}}))
    file = str(tmp_path / "sources.json")
    worker = start_worker("first-sync", {"QUIVER_SOURCES_FILE": file})
    try:
        api.force_login(admin_user)
        data = api.post(
            SOURCES, {"name": "weather", "url": upstream.url}, format="json"
        ).json()
        from django.test import override_settings

        with override_settings(QUIVER_SOURCES_FILE=file):
            call_command("add_stdio_source", "default", "local", stdout=StringIO())
        stdio_job = Job.objects.filter(kind=JobKind.SYNC).exclude(
            pk=data["sync_job"]["id"]
        )[0]
        for job_id in (data["sync_job"]["id"], stdio_job.pk):
            job = wait_until(
                lambda job_id=job_id: finished(job_id), timeout=90, what="the sync"
            )
            assert job.state == JobState.SUCCEEDED, job.errors
    finally:
        stop_worker(worker)
    expected = sorted(upstream.tools)
    assert synced_tools("weather__") == [f"weather__{n}" for n in expected]
    assert synced_tools("local__") == [f"local__{n}" for n in expected]
    assert Source.objects.get(name="weather").status == SourceStatus.OK
