"""POST /api/v1/catalogs/{slug}/import runs as a Celery job on a real worker."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from catalog.models import Tool
from jobs.models import Job
from tests.conftest import wait_until
from tests.factories import weather_schema

pytestmark = [pytest.mark.integration]


def openai_tools() -> list[dict]:
    def fn(name: str, description: str) -> dict:
        body = {
            "name": name,
            "description": description,
            "parameters": weather_schema(),
        }
        return {"type": "function", "function": body}

    bad = {"type": "function", "function": {"description": "no name"}}
    return [
        fn("get_weather", "Current weather."),
        bad,
        fn("get_forecast", "Forecast."),
    ]


def finished(job_id: int) -> Job | None:
    job = Job.objects.get(pk=job_id)
    return job if job.state in ("succeeded", "failed") else None


def test_good_items_land_and_bad_ones_are_rejected_with_the_reason(
    celery_worker, with_key
):
    client = with_key("curator")
    response = client.post(
        "/api/v1/catalogs/default/import", openai_tools(), format="json"
    )
    assert response.status_code == 202, response.json()
    job_id = response.json()["id"]
    job = wait_until(lambda: finished(job_id), timeout=60, what="the import job")
    assert job.state == "succeeded"
    assert job.counts["created"] == 2
    assert job.counts["rejected"] == 1
    rejected = [item for item in job.items if item["outcome"] == "rejected"]
    assert "tools[1].function.name" in rejected[0]["reason"]
    assert sorted(Tool.objects.values_list("name", flat=True)) == [
        "get_forecast",
        "get_weather",
    ]
    shown = client.get(f"/api/v1/jobs/{job_id}/").json()
    assert shown["percent"] == 100


def test_importing_the_same_file_again_reports_unchanged(celery_worker, with_key):
    client = with_key("curator")
    upload = SimpleUploadedFile(
        "tools.json", json.dumps(openai_tools()).encode(), "application/json"
    )
    first = client.post(
        "/api/v1/catalogs/default/import", {"file": upload}, format="multipart"
    ).json()
    wait_until(lambda: finished(first["id"]), timeout=60, what="first import")
    second = client.post(
        "/api/v1/catalogs/default/import?format=openai", openai_tools(), format="json"
    ).json()
    job = wait_until(lambda: finished(second["id"]), timeout=60, what="second import")
    assert job.counts["unchanged"] == 2
    assert job.counts["created"] == 0


def test_an_unrecognised_document_is_refused_before_any_job(with_key, db):
    response = with_key("curator").post(
        "/api/v1/catalogs/default/import", {"hello": "world"}, format="json"
    )
    assert response.status_code == 400
    assert "document" in response.json()["fields"]
    assert not Job.objects.exists()


def test_a_named_format_that_does_not_exist_is_refused(with_key, db):
    response = with_key("curator").post(
        "/api/v1/catalogs/default/import?format=yaml", [], format="json"
    )
    assert response.status_code == 400
    assert "format" in response.json()["fields"]
