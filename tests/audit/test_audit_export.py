"""The export of the current filter as CSV or JSONL: the console's
/audit/export, the API's /api/v1/audit/export and `manage.py audit_export`, all
streamed, every row with its place in the chain and its hash."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.http import StreamingHttpResponse

from audit.models import AuditEvent
from audit.services import seal_pending

pytestmark = pytest.mark.django_db


def streamed_text(response) -> str:
    assert response.status_code == 200, response.content
    assert isinstance(response, StreamingHttpResponse)
    return response.getvalue().decode()


def test_the_console_streams_the_filtered_csv_with_seq_and_hash(as_compliance, trail):
    response = as_compliance.get("/audit/export?format=csv&actor=support-bot")
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(streamed_text(response))))
    assert [int(row["id"]) for row in rows] == sorted(
        AuditEvent.objects.filter(actor_name="api:support-bot").values_list(
            "id", flat=True
        )
    )
    for row in rows:
        event = AuditEvent.objects.get(pk=row["id"])
        assert (int(row["seq"]), row["hash"]) == (event.seq, event.hash)
        assert json.loads(row["output"]) == event.output


def test_the_api_streams_jsonl_one_event_a_line(with_key, trail):
    response = with_key("compliance").get("/api/v1/audit/export?format=jsonl")
    lines = streamed_text(response).splitlines()
    records = [json.loads(line) for line in lines]
    seal_pending()
    assert [r["id"] for r in records] == sorted(
        AuditEvent.objects.values_list("id", flat=True)
    )
    assert all(r["hash"] and r["seq"] for r in records)


def test_the_api_export_refuses_unknown_filters_and_formats(with_key):
    api = with_key("compliance")
    unknown = api.get("/api/v1/audit/export?format=csv&who=x")
    assert (unknown.status_code, list(unknown.json()["fields"])) == (400, ["who"])
    bad = api.get("/api/v1/audit/export?format=xml")
    assert (bad.status_code, list(bad.json()["fields"])) == (400, ["format"])


def test_the_api_export_needs_the_compliance_scope(with_key):
    assert with_key("curator").get("/api/v1/audit/export").status_code == 403


def test_a_curator_cannot_export_from_the_console(as_curator):
    assert as_curator.get("/audit/export?format=csv").status_code == 403


def test_the_command_writes_the_filtered_export_to_a_file(trail, tmp_path):
    out = tmp_path / "audit.jsonl"
    call_command(
        "audit_export",
        "--format",
        "jsonl",
        "--event-type",
        "selection",
        "--out",
        str(out),
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in records] == [
        trail.refund.pk,
        trail.weather.pk,
        trail.nothing.pk,
    ]


def test_the_command_refuses_a_bad_filter(trail):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="since"):
        call_command("audit_export", "--since", "someday")
