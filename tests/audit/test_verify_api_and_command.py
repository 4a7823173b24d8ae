"""GET /api/v1/audit/verify and `manage.py audit_verify` name the damage alike."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from audit.models import AuditEvent
from audit.services import Damage, record_event, seal_pending, verify_chain
from compliance.api.views import SINCE_RULE

pytestmark = pytest.mark.django_db


def record(summary: str) -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        summary=summary,
        input={"query": summary},
        output={},
    )


def edit_as_owner(event: AuditEvent) -> None:
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE audit_auditevent SET summary = 'edited' WHERE id = %s", [event.pk]
        )
        cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")


def test_the_api_seals_then_reports_a_good_chain(with_key):
    api = with_key("compliance")  # its key's creation is an event too
    record("a")
    last = record("b")
    body = api.get("/api/v1/audit/verify").json()
    assert body["ok"] is True
    assert (body["checked"], body["first_bad_id"], body["problem"]) == (3, None, "")
    assert (body["kind"], body["head_seq"], body["head_id"]) == ("", 3, last.pk)


def test_the_api_names_the_first_bad_record_and_the_kind(with_key):
    events = [record(str(n)) for n in range(3)]
    seal_pending()
    edit_as_owner(events[1])
    body = with_key("compliance").get("/api/v1/audit/verify").json()
    assert (body["ok"], body["first_bad_id"], body["kind"]) == (
        False,
        events[1].pk,
        Damage.CONTENT_EDITED,
    )
    assert body["problem"] == body["problem"].strip() != ""


def test_the_api_verifies_from_an_id_on(with_key):
    api = with_key("compliance")
    events = [record(str(n)) for n in range(4)]
    seal_pending()
    edit_as_owner(events[0])
    assert api.get("/api/v1/audit/verify").json()["ok"] is False
    body = api.get(f"/api/v1/audit/verify?since={events[1].pk}").json()
    assert (body["ok"], body["checked"]) == (True, 3)


def test_a_bad_since_is_a_400_naming_the_field(with_key):
    response = with_key("compliance").get("/api/v1/audit/verify?since=yesterday")
    assert response.status_code == 400
    assert response.json()["fields"] == {"since": [SINCE_RULE]}


def test_an_unknown_checkpoint_source_is_a_400_naming_the_field(with_key):
    api = with_key("compliance")
    response = api.get("/api/v1/audit/verify?checkpoints=tape")
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "checkpoints": ["must be one of file, postgres, s3"]
    }
    response = api.get("/api/v1/audit/verify?checkpoints=s3")
    assert response.json()["fields"] == {
        "checkpoints": ["s3 needs QUIVER_AUDIT_CHECKPOINT_S3 to be set"]
    }


def test_an_agent_cannot_verify(with_key):
    assert with_key("agent").get("/api/v1/audit/verify").status_code == 403


def test_the_list_shows_rows_sealed(with_key):
    api = with_key("compliance")
    event = record("a")
    [row] = api.get(f"/api/v1/audit/?request_id={event.request_id}").json()["results"]
    assert row["seq"] == 2 and len(row["hash"]) == 64 and row["hash_version"] == 2


def test_the_command_says_ok_for_a_good_chain(capsys):
    record("a")
    call_command("audit_verify")
    assert capsys.readouterr().out.startswith("OK: 1 records")


def test_the_command_fails_naming_the_record_and_the_damage(capsys):
    events = [record(str(n)) for n in range(3)]
    seal_pending()
    edit_as_owner(events[2])
    with pytest.raises(CommandError, match="content_edited"):
        call_command("audit_verify")
    out = capsys.readouterr().out
    assert f"DAMAGED (content_edited) at id {events[2].pk} (seq 3)" in out


def test_the_command_takes_a_date_and_prints_json(capsys):
    record("a")
    call_command("audit_verify", "--since", "2000-01-01", "--json")
    result = json.loads(capsys.readouterr().out)
    assert (result["ok"], result["checked"]) == (True, 1)


def test_the_command_refuses_a_bad_since():
    with pytest.raises(CommandError, match="--since: expected an audit id"):
        call_command("audit_verify", "--since", "last week")


@pytest.mark.django_db(transaction=True)
def test_verifying_in_two_threads_checks_every_record():
    for n in range(30):
        record(str(n))
    seal_pending()
    check = verify_chain(workers=2, batch=5)
    assert (check.ok, check.checked) == (True, 30)


@pytest.mark.django_db(transaction=True)
def test_two_threads_name_the_same_first_bad_record_as_one():
    events = [record(str(n)) for n in range(30)]
    seal_pending()
    edit_as_owner(events[22])
    edit_as_owner(events[25])
    one = verify_chain(batch=5)
    two = verify_chain(workers=2, batch=5)
    assert (two.kind, two.first_bad_id) == (one.kind, one.first_bad_id)
    assert two.first_bad_id == events[22].pk


def test_since_after_the_last_record_checks_nothing_but_the_tail():
    last = record("a")
    check = verify_chain(since=last.pk + 1000)
    assert (check.ok, check.checked) == (True, 0)
