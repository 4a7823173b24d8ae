"""A request's sentences go through the static query encoder once one is built:
the answer and its audit record name it, a replay uses it, and a replay without
it says so. Real model, real training (a small one), real Postgres."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection

from audit.choices import EventType
from audit.models import AuditEvent
from catalog.models import Tool
from catalog.services.query_encoder import build_is_due, build_query_encoder
from catalog.tasks import build_query_encoder_if_due
from embeddings import backends
from embeddings.static import forget_loaded
from embeddings.static_training import TrainingSetup
from tests.selection.test_select_sentences import LONG, SHORT, TOOLS, select
from tests.selection.test_select_sentences import catalog as catalog  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def encoder_path(tmp_path: Path, monkeypatch: Any) -> Any:
    """This test's own encoder file (the shared state directory stays clean)."""
    path = tmp_path / "models" / "query-static-test.npz"
    monkeypatch.setattr(backends, "static_encoder_path", lambda: path)
    forget_loaded()
    yield path
    forget_loaded()


@pytest.fixture
def built(catalog: Any, encoder_path: Path) -> str:  # noqa: F811
    return build_query_encoder(setup=TrainingSetup(epochs=2))


def why_not(compliance: Any, answer: dict[str, Any]) -> dict[str, Any]:
    event = AuditEvent.objects.get(selection_id=answer["selection_id"])
    missed = next(n for n in TOOLS if n not in [t["name"] for t in answer["tools"]])
    reply = compliance.get(f"/api/v1/audit/{event.pk}/why-not?tool={missed}")
    assert reply.status_code == 200, reply.json()
    return reply.json()


def test_building_one_is_an_audit_event_naming_it(built, encoder_path):
    event = AuditEvent.objects.get(event_type=EventType.QUERY_ENCODER)
    assert event.output["encoder_id"] == built
    assert event.input["tools"] == len(TOOLS)
    assert encoder_path.exists()
    assert not build_is_due()  # trained on every active tool there is


def test_the_sentences_of_a_request_use_it_and_the_record_names_it(
    built, with_key, settings
):
    agent = with_key("agent", name="agent")
    answer = select(agent, LONG, max_candidates=2, min_score=0)
    assert answer["stats"]["sentence_encoder"] == built
    event = AuditEvent.objects.get(selection_id=answer["selection_id"])
    assert event.output["stats"]["sentence_encoder"] == built
    one_sentence = select(agent, SHORT, max_candidates=2, min_score=0)
    assert "sentence_encoder" not in one_sentence["stats"]
    settings.QUIVER_STATIC_SENTENCES = False
    full_model = select(agent, LONG + " again", max_candidates=2, min_score=0)
    assert "sentence_encoder" not in full_model["stats"]


def test_a_replay_uses_the_recorded_encoder_and_names_it_when_gone(
    built, with_key, encoder_path
):
    answer = select(
        with_key("agent", name="agent"), LONG, max_candidates=2, min_score=0
    )
    compliance = with_key("compliance")
    body = why_not(compliance, answer)
    assert (body["source"], body["reproduces"], body["missing"]) == ("replay", True, [])
    encoder_path.unlink()
    forget_loaded()
    body = why_not(compliance, answer)
    assert body["reproduces"] is False
    gone = f"the static sentence encoder {built!r} is not available"
    assert body["missing"] == [gone]


def test_the_command_refuses_bad_numbers_and_an_empty_catalog(encoder_path):
    with pytest.raises(CommandError, match="--max-tools: must be at least 1"):
        call_command("build_query_encoder", "--max-tools", "0")
    Tool.objects.all().delete()
    with pytest.raises(CommandError, match="no active tools"):
        call_command("build_query_encoder")
    assert not encoder_path.exists()
    assert not AuditEvent.objects.filter(event_type=EventType.QUERY_ENCODER).exists()


def test_the_worker_task_does_nothing_when_automatic_builds_are_off(
    encoder_path, settings
):
    settings.QUIVER_QUERY_ENCODER_AUTO = False
    assert build_query_encoder_if_due() is None
    assert not encoder_path.exists()


def test_if_due_builds_only_when_there_is_none_or_the_catalog_outgrew_it(
    catalog,  # noqa: F811
    encoder_path,
    capsys,
):
    call_command("build_query_encoder", "--if-due", "--epochs", "1")
    assert "built static:" in capsys.readouterr().out
    first = encoder_path.read_bytes()
    call_command("build_query_encoder", "--if-due")
    assert "up to date" in capsys.readouterr().out
    assert encoder_path.read_bytes() == first


def test_a_build_whose_audit_event_is_refused_installs_nothing(
    catalog,  # noqa: F811
    encoder_path,
):
    """No event, no encoder: the file only takes its place with its audit row."""
    with connection.cursor() as cursor:
        cursor.execute(
            "ALTER TABLE audit_auditevent ADD CONSTRAINT test_refuse_encoder "
            "CHECK (event_type <> 'query_encoder') NOT VALID"
        )
    try:
        with pytest.raises(IntegrityError):
            build_query_encoder(setup=TrainingSetup(epochs=1))
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE audit_auditevent DROP CONSTRAINT test_refuse_encoder"
            )
    assert not encoder_path.exists()
    assert list(encoder_path.parent.iterdir()) == []  # no partial file left
