"""Sealing work per row is linear and capped (issue 20): a row's search tokens come
from the first TOKEN_TEXT_CHARS characters of its texts (audit/migrations/0013),
so a huge row yields no more tokens than a capped one; the filters still find a
row by a term in that prefix; a row that cannot be sealed within the budget does
not hold the rows after it."""

from __future__ import annotations

import importlib
import json
import random
import threading
import uuid
from typing import Any

from django.db import connection, connections, transaction

from audit import sealing
from audit.filters import filter_events
from audit.models import AuditEvent
from audit.services import record_event, seal_pending, verify_chain

CHARS = importlib.import_module(
    "audit.migrations.0013_bounded_search_tokens"
).TOKEN_TEXT_CHARS
LIMIT = 20_000
# Letters and accented ones (several bytes in UTF-8, where the old function was
# quadratic): a random text of them has nearly as many trigrams as characters.
ALPHABET = "abcdefghijklmnopqrstuvwxyzéèàüöñçß"


def text(length: int, seed: int = 1) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice(ALPHABET) for _ in range(length))


def record(query: Any, summary: str = "a long one") -> AuditEvent:
    return record_event(
        "selection",
        actor=None,
        request_id=uuid.uuid4(),
        catalog_slug="default",
        summary=summary,
        input={"request": {"query": query}},
        output={"tools": [{"name": "get_weather"}], "excluded": []},
    )


def query_trigrams(event: AuditEvent) -> set[str]:
    event.refresh_from_db()
    summary = {
        f"t:{event.summary[i : i + 3].upper()}" for i in range(len(event.summary))
    }
    return {t for t in event.search_tokens if t.startswith("t:")} - summary


def tokens_of(query: Any) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT audit_search_tokens('selection', '', '', %s::jsonb, '{}'::jsonb)",
            [f'{{"request": {{"query": {json.dumps(query)}}}}}'],
        )
        return list(cursor.fetchone()[0])


def test_sealing_a_row_at_the_size_limit_makes_a_capped_number_of_tokens(db):
    event = record(text(LIMIT))
    seal_pending()
    found = query_trigrams(event)
    assert 0 < len(found) <= CHARS - 2
    assert len(AuditEvent.objects.get(pk=event.pk).search_tokens) < CHARS + 300


def test_a_huge_row_makes_the_same_tokens_as_its_capped_prefix(db):
    """The work is that of the prefix: a 740 kB query (the issue's 50,000-key
    object, as stored before the size limit) yields its prefix's tokens."""
    huge = {f"key{n}": n for n in range(50_000)}
    as_text = json.dumps(huge)  # how jsonb's ->> renders it differs; compare the two
    assert len(as_text) > 700_000
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (%s::jsonb)::text, audit_search_tokens('selection', '', '', "
            "jsonb_build_object('request', jsonb_build_object('query', %s::jsonb)), "
            "'{}'::jsonb)",
            [as_text, as_text],
        )
        rendered, tokens = cursor.fetchone()
    assert sorted(tokens) == sorted(tokens_of(rendered[:CHARS]))
    assert len(tokens) <= CHARS - 2


def test_short_texts_get_exactly_the_trigrams_the_old_function_gave(db):
    """Below the cap nothing changed: every trigram, upper-cased, multi-byte
    characters included (0007's substr over the whole text, recomputed here)."""
    for query in ["refund", "Ünïcödé ßtraße wïth àccents", text(CHARS, seed=7), "ab"]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT ARRAY(SELECT DISTINCT 't:' || substr(u, i, 3) FROM "
                "(SELECT upper(%s) AS u) AS t, generate_series(1, length(u) - 2) i)",
                [query],
            )
            old = set(cursor.fetchone()[0])
        assert set(tokens_of(query)) == old


def test_a_filter_finds_a_row_by_a_term_in_its_prefix_sealed_or_not(db):
    query = text(LIMIT, seed=3)
    term = query[CHARS - 40 : CHARS - 20]
    unsealed = record(query)
    assert [e.pk for e in filter_events(AuditEvent.objects.all(), {"q": term})] == [
        unsealed.pk
    ]
    seal_pending()
    assert [e.pk for e in filter_events(AuditEvent.objects.all(), {"q": term})] == [
        unsealed.pk
    ]


def test_a_term_only_past_the_prefix_is_not_searchable(db):
    """The documented cap: text past the first TOKEN_TEXT_CHARS characters of a
    query holds no tokens, so the text filter does not reach it."""
    query = text(CHARS, seed=4) + " zzzqqqxxx " + text(LIMIT - CHARS - 20, seed=5)
    record(query)
    seal_pending()
    assert not filter_events(AuditEvent.objects.all(), {"q": "zzzqqqxxx"}).exists()


def test_the_sealer_may_shorten_the_prefix_but_never_lengthen_it(db):
    query = text(LIMIT, seed=6)
    short = record(query)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('quiver.audit_token_chars', '100', true)")
        seal_pending()
    assert 0 < len(query_trigrams(short)) <= 98
    long_ = record(query)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('quiver.audit_token_chars', '99999', true)")
        seal_pending()
    assert len(query_trigrams(long_)) <= CHARS - 2


def test_a_row_past_the_budget_is_sealed_with_a_shorter_prefix(db, monkeypatch):
    """Stand-in for a row too slow to seal with its full prefix: any sealing
    UPDATE without a shorter prefix asked for runs "past the budget"."""
    real = sealing._within

    def slow_unless_shortened(cursor: Any, clock: Any, params: Any) -> bool:
        cursor.execute("SELECT current_setting('quiver.audit_token_chars', true)")
        if cursor.fetchone()[0] in (None, ""):
            return False
        return real(cursor, clock, params)

    monkeypatch.setattr(sealing, "_within", slow_unless_shortened)
    events = [record(text(LIMIT, seed=n)) for n in range(3)]
    assert seal_pending() == 3
    for event in events:
        assert 0 < len(query_trigrams(event)) <= sealing.SHORT_TOKEN_CHARS[0] - 2
    assert verify_chain().ok


def test_a_row_locked_by_another_connection_does_not_hold_the_rows_after_it(
    transactional_db, monkeypatch
):
    monkeypatch.setattr(sealing, "SEAL_BUDGET_MS", 100)
    stuck, *others = [record(f"row {n}") for n in range(4)]
    locked, release = threading.Event(), threading.Event()

    def hold_row_lock() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM audit_auditevent WHERE id = %s FOR UPDATE", [stuck.pk]
            )
            locked.set()
            release.wait(timeout=60)
        connections.close_all()

    holder = threading.Thread(target=hold_row_lock)
    holder.start()
    try:
        assert locked.wait(timeout=10)
        assert seal_pending() == len(others)
        sealed = AuditEvent.objects.filter(hash__isnull=False)
        assert sorted(sealed.values_list("id", flat=True)) == [e.pk for e in others]
    finally:
        release.set()
        holder.join()
    assert seal_pending() == 1
    check = verify_chain()
    assert check.ok, check.problem
    assert check.checked == 4
