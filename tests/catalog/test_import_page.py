"""The import page: a dry run first (nothing written), then one click imports
exactly the previewed document, for the person who previewed it."""

from __future__ import annotations

import html
import json
import re

import pytest

from catalog.formats import FORMATS
from catalog.models import Tool, ToolChange
from jobs.models import Job
from tests.factories import make_tool, make_user, weather_schema

pytestmark = pytest.mark.django_db


def preview(client, document, **fields):
    """The dry run's page, and the fields its import button posts back."""
    body = {"catalog": "default", "format": "", "text": json.dumps(document)}
    response = client.post("/import/", {**body, **fields})
    page = response.content.decode()
    posted = dict(
        re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page)
    )
    return response, {k: html.unescape(v) for k, v in posted.items()}


def test_pasting_a_document_shows_the_dry_run_and_writes_nothing(as_curator):
    make_tool(name="get_time", description="Time.")
    document = [
        {"name": "get_weather", "parameters": weather_schema()},
        {"name": "get_time", "description": "Time now."},
        {"name": "bad\u202ename"},
    ]
    changes = ToolChange.objects.count()
    response, _ = preview(as_curator, document)
    page = response.content.decode()
    assert response.status_code == 200
    assert "Dry run: nothing has been written yet" in page
    assert 'data-item="get_weather"' in page and "created" in page
    assert "direction-changing" in page
    assert not Job.objects.exists()
    assert ToolChange.objects.count() == changes
    assert list(Tool.objects.values_list("name", flat=True)) == ["get_time"]


def test_the_dry_runs_button_imports_that_document_and_goes_to_its_job(as_curator):
    document = [{"name": "get_weather", "parameters": weather_schema()}]
    _, posted = preview(as_curator, document)
    response = as_curator.post("/import/", {**posted, "csrfmiddlewaretoken": ""})
    job = Job.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert (job.kind, job.total, job.options["format"]) == ("import", 1, "canonical")
    assert job.payload == document


def test_a_confirmation_with_a_changed_document_is_refused(as_curator):
    _, posted = preview(as_curator, [{"name": "get_weather"}])
    posted["document"] = json.dumps([{"name": "get_weather", "safe": False}])
    response = as_curator.post("/import/", posted)
    assert response.status_code == 400
    assert "preview the file again" in response.content.decode()
    assert not Job.objects.exists()


def test_a_confirmation_by_someone_else_or_without_a_token_is_refused(
    as_curator, client
):
    _, posted = preview(as_curator, [{"name": "get_weather"}])
    client.force_login(make_user("other-curator", groups=("curator",)))
    assert client.post("/import/", posted).status_code == 400
    unsigned = {**posted, "token": posted["token"][:-2] + "xx"}
    assert client.post("/import/", unsigned).status_code == 400
    assert not Job.objects.exists()


def test_a_confirmation_after_the_preview_expired_is_refused(as_curator, monkeypatch):
    _, posted = preview(as_curator, [{"name": "get_weather"}])
    monkeypatch.setattr("catalog.import_preview.MAX_AGE", -1)
    assert as_curator.post("/import/", posted).status_code == 400
    assert not Job.objects.exists()


def test_the_import_page_offers_a_sample_file_per_format(as_curator):
    page = as_curator.get("/import/").content.decode()
    for fmt in FORMATS:
        assert f"samples/import-{fmt}.json" in page
