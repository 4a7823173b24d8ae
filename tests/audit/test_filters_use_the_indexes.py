"""The audit filters at scale: each returns exactly the events the plain JSON or
text query matches (the search tokens lose nothing and add nothing), and each rare
filter's SQL is one the 0007 indexes can serve."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import IntegrityError, ProgrammingError, connection
from django.db.models import Q
from django.utils import timezone

from audit.filters import filter_events
from audit.models import AuditEvent
from audit.services import record_event

pytestmark = pytest.mark.django_db


def _selection(actor: str, query: Any, output: Any, summary: str = "") -> None:
    record_event(
        "selection",
        actor=None,
        request_id=None,
        selection_id=uuid.uuid4(),
        catalog_slug="default",
        summary=summary or f"{query} -> picks",
        input={"request": {"query": query}},
        output=output,
    )


def _odd_events() -> None:
    """Events of every shape a filter could stumble on."""
    pick = {"name": "get_weather", "score": 0.5}
    cut = {"name": "refund:v2", "stage": "rank", "reason": "cut", "score": 0.1}
    policy = {"name": "wipe_disk", "stage": "policy", "reason": "unsafe"}
    _selection("Straße Größe", "Wetter in der Straße", {"tools": [pick]})
    _selection("agent-7", "refund 100% of it_now", {"tools": [], "excluded": [cut]})
    _selection("AGENT-70", "REFUND the order", {"tools": [pick], "excluded": [policy]})
    _selection("agent-8", {"intent": "refund", "id": 4242}, {"tools": "get_weather"})
    _selection("x", "ab", {"tools": [{"name": 5}, "get_weather"], "excluded": [1]})
    _selection("x", "q", ["not", "an", "object"], summary="number 4242 -> none")
    _selection("x", None, {"tools": [{"name": "wipe_disk"}], "degraded": True})
    _selection("x", "C:\\back\\slash n_w nOw", {"tools": []})
    sid = str(AuditEvent.objects.order_by("id").values_list("selection_id")[0][0])
    record_event(
        "tool_changed",
        actor=None,
        request_id=None,
        summary="not a selection, same words",
        input={},
        output={"tools": [pick], "excluded": [policy]},
    )
    for linked, valid in ((sid, False), (None, True)):
        record_event(
            "validation",
            actor=None,
            request_id=None,
            summary="1 tool call(s)",
            input={"selection_id": linked, "calls": []},
            output={"selection_id": linked, "valid": valid},
        )


def _seal() -> int:
    from audit.sealing import seal_pending

    return seal_pending()


def _plain(name: str, value: str) -> Q:
    """The filter as it was written before the indexes (the reference)."""
    selection = Q(event_type="selection")
    return {
        "tool": selection & Q(output__contains={"tools": [{"name": value}]}),
        "excluded_tool": selection
        & Q(output__contains={"excluded": [{"name": value}]}),
        "reason": selection & Q(output__contains={"excluded": [{"reason": value}]}),
        "actor": Q(actor_name__icontains=value),
        "q": Q(summary__icontains=value) | Q(input__request__query__icontains=value),
    }[name]


CASES = [
    ("tool", "get_weather"),
    ("tool", "wipe_disk"),
    ("tool", "5"),
    ("tool", "nothing_like_it"),
    ("excluded_tool", "refund:v2"),
    ("excluded_tool", "wipe_disk"),
    ("reason", "unsafe"),
    ("reason", "cut"),
    ("actor", "agent-7"),
    ("actor", "STRASSE"),
    ("actor", "straße"),
    ("actor", "gent"),
    ("actor", "7"),
    ("q", "refund"),
    ("q", "100%"),
    ("q", "it_now"),
    ("q", "4242"),
    ("q", "wetter IN"),
    ("q", "ab"),
    ("q", "intent"),
    ("q", "k\\sla"),
    ("q", "n_w"),
    ("q", "n%w"),
    ("q", "%"),
    ("q", "NOW"),
    ("actor", "%"),
    ("actor", "_"),
]


@pytest.mark.parametrize("sealed", [False, True], ids=["unsealed", "sealed"])
@pytest.mark.parametrize(("name", "value"), CASES)
def test_each_filter_returns_exactly_what_the_plain_query_matches(name, value, sealed):
    _odd_events()
    if sealed:  # the stored tokens; before, each row's computed on the fly
        _seal()
    got = set(filter_events(AuditEvent.objects.all(), {name: value}))
    assert got == set(AuditEvent.objects.filter(_plain(name, value)))


def test_the_search_finds_events_written_and_sealed_alike():
    _odd_events()
    unsealed = set(filter_events(AuditEvent.objects.all(), {"tool": "get_weather"}))
    assert _seal() == AuditEvent.objects.count()
    sealed = set(filter_events(AuditEvent.objects.all(), {"tool": "get_weather"}))
    assert {e.pk for e in sealed} == {e.pk for e in unsealed} != set()


def test_a_selection_lists_the_validations_that_name_it():
    _odd_events()
    selection = AuditEvent.objects.order_by("id").first()
    linked = AuditEvent.objects.validations_of(str(selection.selection_id))
    assert [e.output.get("valid") for e in linked] == [False]


def _tokens_computed_now(event_id: int) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT audit_search_tokens(event_type, actor_name, summary, input, "
            "output) FROM audit_auditevent WHERE id = %s",
            [event_id],
        )
        return cursor.fetchone()[0]


def test_a_row_gets_its_search_tokens_when_it_is_sealed_not_on_its_insert():
    _odd_events()
    assert not any(AuditEvent.objects.values_list("search_tokens", flat=True))
    assert _seal() == AuditEvent.objects.count()
    for event in AuditEvent.objects.all():
        assert event.search_tokens == _tokens_computed_now(event.pk)
    weather = AuditEvent.objects.get(summary__startswith="Wetter")
    assert "p:get_weather" in weather.search_tokens


def test_an_insert_cannot_choose_its_own_search_tokens():
    with pytest.raises(IntegrityError, match="audit_event_tokens_at_seal"):
        AuditEvent.objects.create(
            event_type="selection",
            actor_name="mallory",
            request_id=uuid.uuid4(),
            catalog_slug="default",
            input={},
            output={"tools": []},
            created=timezone.now(),
            search_tokens=["p:get_weather"],
        )


def test_nobody_can_change_an_events_search_tokens_after_its_insert():
    _odd_events()
    _seal()
    with pytest.raises(ProgrammingError, match="append-only"), connection.cursor() as c:
        c.execute("UPDATE audit_auditevent SET search_tokens = '{p:wipe_disk}'")


def test_the_sealer_cannot_choose_the_tokens_it_seals_with():
    _odd_events()
    event = AuditEvent.objects.get(summary__startswith="Wetter")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_auditevent SET seq = 1, hash = 'h', prev_hash = 'g', "
            "search_tokens = '{p:wipe_disk}' WHERE id = %s",
            [event.pk],
        )
    event.refresh_from_db()
    assert "p:wipe_disk" not in event.search_tokens
    assert event.search_tokens == _tokens_computed_now(event.pk)


def _plan(params: dict[str, str]) -> str:
    """The plan with scans off and, on a table this small, the index on the event
    type (which would win) set aside; all inside the test's transaction."""
    events = filter_events(AuditEvent.objects.all(), params).order_by("-id")
    sql, args = events.query.sql_with_params()
    by_type = [
        i.name for i in AuditEvent._meta.indexes if i.fields[:1] == ["event_type"]
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {by_type[0]}")
        cursor.execute("ANALYZE audit_auditevent")
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(f"EXPLAIN {sql}", args)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize(
    ("params", "index"),
    [
        ({"tool": "get_weather"}, "audit_event_search"),
        ({"excluded_tool": "wipe_disk"}, "audit_event_search"),
        ({"reason": "unsafe"}, "audit_event_search"),
        ({"actor": "agent-7"}, "audit_event_search"),
        ({"q": "number 4242"}, "audit_event_search"),
        ({"degraded": "yes"}, "audit_event_degraded"),
        ({"no_tools": "on"}, "audit_event_no_tools"),
        ({"invalid_calls": "on"}, "audit_event_invalid"),
    ],
)
def test_each_rare_filter_can_be_served_by_its_index(params, index):
    _odd_events()
    plan = _plan(params)
    assert index in plan, plan
