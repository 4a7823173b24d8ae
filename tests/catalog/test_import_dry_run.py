"""POST /api/v1/catalogs/{slug}/import?dry_run=true answers what the import would
do, item by item, and writes nothing; the sample files import cleanly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import AuditEvent
from catalog.formats import FORMATS
from catalog.models import Catalog, Tool, ToolChange
from catalog.services.catalogs import create_catalog
from catalog.services.imports import preview_import, run_import, start_import
from jobs.models import Job
from tests.catalog.test_bulk_import import claimed, import_into, mixed_document, seed
from tests.factories import make_user

pytestmark = [pytest.mark.integration]

SAMPLES = Path(django_settings.BASE_DIR) / "static" / "samples"


def state() -> dict[str, Any]:
    """Everything an import may write."""
    return {
        "tools": list(Tool.objects.order_by("id").values_list("name", "version")),
        "changes": ToolChange.objects.count(),
        "audit": AuditEvent.objects.count(),
        "jobs": Job.objects.count(),
        "versions": list(Catalog.objects.order_by("id").values_list("version")),
    }


def test_a_dry_run_reports_each_outcome_with_its_reason_and_writes_nothing(
    with_key,
):
    seed(Catalog.objects.get(slug="default"))
    api = with_key("curator")
    before = state()
    response = api.post(
        "/api/v1/catalogs/default/import?dry_run=true",
        mixed_document(),
        format="json",
    )
    assert response.status_code == 200, response.json()
    report = response.json()
    assert report["dry_run"] is True
    assert report["counts"] == {
        "created": 3,
        "updated": 3,
        "unchanged": 3,
        "rejected": 6,
    }
    rejected = [item for item in report["items"] if item["outcome"] == "rejected"]
    assert all(item["reason"] for item in rejected)
    assert any("held_name" in item["reason"] for item in rejected)
    assert state() == before


def test_a_dry_run_predicts_exactly_what_the_import_then_does(
    transactional_db, purged_broker, settings
):
    seed(create_catalog("bulk", "bulk"))
    catalog = Catalog.objects.get(slug="bulk")
    report = preview_import(
        catalog, mixed_document(), "canonical", actor=make_user("planner")
    )
    job = import_into("bulk", mixed_document(), settings, chunk=4)
    assert report["items"] == job.items
    assert report["counts"] == job.counts


def test_a_dry_run_of_an_uploaded_file_writes_nothing_either(with_key):
    api = with_key("curator")
    before = state()
    upload = SimpleUploadedFile(
        "tools.json", json.dumps(mixed_document()).encode(), "application/json"
    )
    response = api.post(
        "/api/v1/catalogs/default/import?dry_run=true&format=canonical",
        {"file": upload},
        format="multipart",
    )
    assert response.status_code == 200, response.json()
    assert sum(response.json()["counts"].values()) == len(mixed_document())
    assert response.json()["counts"]["created"] == 5
    assert state() == before


def test_a_dry_run_value_that_is_not_a_boolean_is_refused_by_name(with_key):
    response = with_key("curator").post(
        "/api/v1/catalogs/default/import?dry_run=perhaps", [], format="json"
    )
    assert response.status_code == 400
    assert "dry_run" in json.dumps(response.json())
    assert Job.objects.count() == 0


def test_an_agent_key_may_not_dry_run_an_import(with_key):
    response = with_key("agent").post(
        "/api/v1/catalogs/default/import?dry_run=true", mixed_document(), format="json"
    )
    assert response.status_code == 403


def test_an_unreadable_document_is_refused_by_the_dry_run_too(with_key):
    response = with_key("curator").post(
        "/api/v1/catalogs/default/import?dry_run=true",
        {"not": "tools"},
        format="json",
    )
    assert response.status_code == 400
    assert "document" in json.dumps(response.json())


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_sample_file_imports_cleanly(
    fmt, transactional_db, purged_broker, settings
):
    document = json.loads((SAMPLES / f"import-{fmt}.json").read_text())
    create_catalog("samples", "samples")
    catalog = Catalog.objects.get(slug="samples")
    report = preview_import(catalog, document, fmt, actor=None)
    assert report["format"] == fmt
    assert report["counts"] == {"created": 2, "updated": 0} | {
        "unchanged": 0,
        "rejected": 0,
    }
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    job = start_import(catalog, document, fmt, actor=make_user("sampler"))
    job = run_import(claimed(job.pk))
    assert job.counts["created"] == 2
    assert Tool.objects.filter(catalog=catalog).count() == 2


def test_a_dry_run_past_its_time_stops_and_says_so_writing_nothing(
    with_key, monkeypatch
):
    api = with_key("curator")
    monkeypatch.setattr("catalog.services.imports.DRY_RUN_DEADLINE_S", 0.0)
    before = state()
    response = api.post(
        "/api/v1/catalogs/default/import?dry_run=true", mixed_document(), format="json"
    )
    assert response.status_code == 400
    body = json.dumps(response.json())
    assert "document: the dry run checked 0 of 15 items" in body
    assert state() == before


def test_a_dry_run_is_not_held_up_by_a_writer_holding_the_catalog(
    transactional_db, settings
):
    import threading

    from django.db import connection, transaction

    from catalog.services.tools import lock_catalog

    seed(create_catalog("busy", "busy"))
    catalog = Catalog.objects.get(slug="busy")
    locked, release = threading.Event(), threading.Event()

    def writer() -> None:
        with transaction.atomic():
            lock_catalog(catalog.pk)
            list(Tool.objects.select_for_update().filter(catalog=catalog))
            locked.set()
            release.wait(10)
        connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert locked.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '1s'")
        report = preview_import(catalog, mixed_document(), "canonical", actor=None)
        assert report["counts"]["created"] == 3
    finally:
        release.set()
        thread.join()
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = 0")
