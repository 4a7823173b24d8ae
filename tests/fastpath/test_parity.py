"""Each fast path (config.fast) gives what the ORM or DRF path it replaces gives.

- rows: the readers' instances are the querysets' instances, field by field, for
  real rows with NULLs and JSON; each read is one query.
- plain input: /select's and a call's bodies, good or bad, get exactly what their
  serializer gives: the same validated data or the same field errors.
- COPY: the rows ``copy_insert`` stores are the rows ``bulk_create`` stores.
- INSERT made once, and sent beside: an audit row written either way is the row
  ``save`` writes, and the chain they join verifies.

Readers that also keep a rule between requests have their own tests besides
(tests/calls/test_call_reads.py, tests/audit/test_audit_writer.py).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer

from audit.models import AuditEvent
from audit.services import EventRow, record_event, seal_pending, verify_chain
from calls import input as call_input_module
from calls.input import CallInputSerializer, call_input
from catalog.models import Catalog, Tool
from catalog.reads import catalog_by_slug, tools_named
from catalog.sizes import MAX_STORED_CHARS
from config.fast.copy_rows import copy_insert
from config.fast.rows import Columns, fetch_all, split
from identity.models import ApiClient
from identity.reads import client_by_prefix
from identity.services.clients import create_api_client
from selection.api import input as select_input_module
from selection.api.input import select_input
from selection.api.serializers import SelectInputSerializer
from selection.models import SelectionSettings
from selection.services.settings import update_selection_settings
from tests.factories import make_sample_catalog, make_tool, make_user


def values(instance: Any) -> dict[str, Any]:
    """Every loaded field with its type (an int is not a Decimal, text not JSON)."""
    deferred = instance.get_deferred_fields()
    return {
        field.attname: (type(value).__name__, value)
        for field in instance._meta.concrete_fields
        if field.attname not in deferred
        for value in [getattr(instance, field.attname)]
    }


def loaded(found: Any, expected: Any) -> bool:
    """``found``'s loaded fields equal ``expected``'s (the rest load on use)."""
    mine = values(found)
    return mine == {name: v for name, v in values(expected).items() if name in mine}


# Rows: config.fast.rows and the readers built on it.


@pytest.mark.django_db
def test_rows_with_nulls_and_json_read_as_the_queryset_reads_them():
    olga = make_user("olga")
    catalog = make_sample_catalog()
    bare = make_tool(catalog, "bare_tool")
    Tool.objects.filter(pk=bare.pk).update(parameters=None, strict=None)
    for actor, selection in ((None, None), (olga, uuid.uuid4())):
        record_event(
            "selection", actor=actor, request_id=None, selection_id=selection,
            summary="s", input={"n": None, "list": [1, 2.5, "x"]}, output={},
        )  # fmt: skip
    tools, catalogs = Columns(Tool, "t"), Columns(Catalog, "c", only=("slug",))
    sql = (
        f"SELECT {tools.sql()}, {catalogs.sql()} FROM catalog_tool t "
        "JOIN catalog_catalog c ON c.id = t.catalog_id ORDER BY t.id"
    )
    with CaptureQueriesContext(connection) as queries:
        rows = fetch_all(sql, [])
    assert len(queries) == 1
    expected = list(Tool.objects.select_related("catalog").order_by("id"))
    assert len(rows) == len(expected) > 1
    for row, tool in zip(rows, expected, strict=True):
        mine, its, _ = split(row, [tools, catalogs])
        assert values(tools.instance(mine)) == values(tool)
        assert loaded(catalogs.instance(its), tool.catalog)
    events = Columns(AuditEvent, "e")
    table = AuditEvent._meta.db_table
    found = fetch_all(f"SELECT {events.sql()} FROM {table} e ORDER BY e.id", [])
    ordered = AuditEvent.objects.order_by("id")
    assert [values(events.instance(r)) for r in found] == [values(e) for e in ordered]


@pytest.mark.django_db
def test_a_key_reads_as_select_related_reads_it():
    olga = make_user("olga", groups=("admin",))
    parent, _ = create_api_client(
        "parent", "curator", catalogs="*", roles=["ops"], actor=olga
    )
    child, _ = create_api_client(
        "child", "agent", catalogs=["default"], actor=parent.user
    )
    for made in (parent, child):
        expected = ApiClient.objects.select_related("user", "owner").get(pk=made.pk)
        with CaptureQueriesContext(connection) as queries:
            found = client_by_prefix(made.key_prefix)
            assert found is not None
            assert values(found) == values(expected)
            assert loaded(found.user, expected.user)
            assert (found.owner is None) == (expected.owner is None)
            assert found.owner is None or loaded(found.owner, expected.owner)
            assert found.user.api_client is found
            assert found.user.is_authenticated
        assert len(queries) == 1
        assert found.user.email == expected.user.email  # loads on first use
    assert client_by_prefix("qv_nothere") is None


@pytest.mark.django_db
def test_a_catalog_and_its_tools_read_as_the_querysets_read_them():
    catalog = make_sample_catalog()
    assert values(catalog_by_slug(catalog.slug)) == values(
        Catalog.objects.get(pk=catalog.pk)
    )
    assert catalog_by_slug("nope") is None
    names = ["get_weather", "send_email", "not_a_tool"]
    found = {tool.name: tool for tool in tools_named(catalog, names)}
    expected = Tool.objects.filter(catalog=catalog, name__in=names)
    assert set(found) == {"get_weather", "send_email"}
    for tool in expected:
        assert loaded(found[tool.name], tool)
        mine = set(values(found[tool.name]))
        assert {"parameters", "cost_per_call", "version", "content_hash"} <= mine


@pytest.mark.django_db
def test_settings_read_as_the_queryset_reads_them(admin_user):
    catalog = make_sample_catalog()
    assert SelectionSettings.objects.effective_for(catalog)[1] == 0
    update_selection_settings(
        catalog, {"default_scorer": "bm25f", "candidate_pool": 40}, actor=admin_user
    )
    stored, version = SelectionSettings.objects.effective_for(catalog)
    row = SelectionSettings.objects.get(catalog=catalog)
    assert (stored.default_scorer, stored.candidate_pool) == ("bm25f", 40)
    assert version == row.version


# Plain input: config.fast.plain_input, and /select's and a call's readers.


def typed(value: Any) -> Any:
    """``value`` with every leaf's type beside it: 0 and 0.0 differ (the audit row
    and the answer cache's key would), as do an error's message and its code."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [typed(item) for item in value]
    return (type(value).__name__, value, getattr(value, "code", None))


def serializer_answer(serializer_class: type[Serializer], body: Any) -> tuple[str, Any]:
    """What the serializer makes of ``body``: its validated data or its errors."""
    serializer = serializer_class(data=body)
    if serializer.is_valid():
        return "valid", typed(dict(serializer.validated_data))
    return "invalid", typed(serializer.errors)


def reader_answer(
    reader: Callable[[Any], dict[str, Any]], body: Any
) -> tuple[str, Any]:
    """What the input reader (plain path first) makes of ``body``."""
    try:
        return "valid", typed(reader(body))
    except ValidationError as exc:
        return "invalid", typed(exc.detail)


ODD = [None, "", " ", [], {}, True, False, 0, -1, 1.5, "x", ["a"], {"a": 1}]
ID = str(uuid.uuid4())
# For each field, values of every kind its field could meet: plainly valid ones,
# ones DRF coerces ("3", 3.0, "true"), and ones it refuses.
SELECT_VALUES: dict[str, list[Any]] = {
    "catalog": ["default", "my-cat_2", " default", "default ", "a b", "é", "a" * 300],
    "query": ["weather in Paris", "  padded  ", "\t", {"task": "mail"}, 7, "x" * 9000,
              "x" * (MAX_STORED_CHARS + 1)],
    "messages": [[{"role": "user", "content": "hi"}], [{"content": "no role"}],
                 [{"role": 1}], ["not a dict"], [{}], [{"role": "user"}] * 501],
    "max_candidates": [1, 3, 20, 21, 0, "3", 3.0, 3.5, 10**5000, -3, "ten"],
    "min_score": [0, 0.0, 0.05, 1, 1.0, 1.01, -0.1, "0.2", True, 10**400, 1e308],
    "scorer": ["hybrid", "bm25f", "Hybrid", "nope", 1],
    "allow_unsafe": [True, False, "true", 1, 0, "no", "maybe"],
    "roles": [["support"], [], [" support"], ["a" * 201], ["a" * 200], [1],
              ["ok", ""], "support", [None], ["x"] * 1001],
    "categories": [["travel"], ["travel", "mail"]],
    "allow_tools": [["get_weather"], [" t "]],
    "block_tools": [["send_email"], ["\n"]],
    "max_cost_per_call": [0, 0.5, 10**400, 1e308, -1, "1"],
    "max_total_tokens": [0, 100, -1, 1.0, "5"],
    "require_capabilities": [["read-only"], ["a\u00e9"]],
    "recent_tools": [["get_weather", "send_email"], [["nested"]]],
    "format": ["canonical", "openai", "mcp", "xml", ""],
    "explain": [True, False, "false", 0],
    "timeout_ms": [0, 500, 60_000, 60_001, -5, "100"],
}  # fmt: skip
CALL_VALUES: dict[str, list[Any]] = {
    "name": ["weather.get_forecast", "a" * 200, "a" * 201, " padded", "padded\n",
             "\u00a0nbsp", "nul\x00", "lone\ud800", "é", 7],
    "arguments": [{}, {"city": "Paris"}, {"deep": {"a": [1, 2]}}, [], "{}",
                  {"big": "x" * (MAX_STORED_CHARS + 1)}, {"n\x00": 1},
                  {"days": -float("inf")}, {"n": float("nan")}],
    "catalog": ["default", "my-cat_2", " default", "default\n", "a b", "é", "a" * 300],
    "selection_id": [ID, ID.upper(), ID.replace("-", ""), "not-a-uuid"],
    "approval_id": [ID, "123"],
}  # fmt: skip


class Reader:
    """One plain input reader, its serializer, and the bodies it is swept with."""

    def __init__(self, serializer: type[Serializer], read: Any, **table: Any) -> None:
        self.serializer, self.read, self.module = serializer, read, table["module"]
        self.values: dict[str, list[Any]] = table["values"]
        self.base: dict[str, Any] = table["base"]
        self.pairs: list[str] = table["pairs"]
        self.plain: list[dict[str, Any]] = table["plain"]
        self.odd_bodies: list[Any] = table["odd_bodies"]

    def both(self, body: Any) -> tuple[tuple[str, Any], tuple[str, Any]]:
        return reader_answer(self.read, body), serializer_answer(self.serializer, body)


READERS = {
    "select": Reader(
        SelectInputSerializer, select_input, module=select_input_module,
        values=SELECT_VALUES, base={"query": "what's the weather in Paris?"},
        pairs=["query", "messages", "max_candidates", "min_score", "roles", "format"],
        plain=[
            {"query": "send mail to Bob"},
            {"query": "x", "catalog": "ops", "max_candidates": 5, "min_score": 0,
             "scorer": "bm25f", "roles": ["support"], "explain": True,
             "format": "mcp", "timeout_ms": 250, "max_cost_per_call": 2,
             "recent_tools": ["a", "b"]},
            {"messages": [{"role": "user", "content": "hi"}], "allow_unsafe": False},
        ],
        odd_bodies=[[], "query", None, 3, {"query": "x", "max_candidate": 3},
                    {"query": "x", "csrfmiddlewaretoken": "t"}],
    ),
    "call": Reader(
        CallInputSerializer, call_input, module=call_input_module,
        values=CALL_VALUES, base={"name": "weather.get_forecast"},
        pairs=list(CALL_VALUES),
        plain=[
            {"name": "weather.get_forecast", "arguments": {"city": "Paris"}},
            {"name": "t", "catalog": "ops", "selection_id": None},
            {"name": "t"},
        ],
        odd_bodies=[[], "name", None, 3, {}, {"name": "x", "argument": {}},
                    {"name": "x", "csrfmiddlewaretoken": "t"}],
    ),
}  # fmt: skip
readers = pytest.mark.parametrize("reader", READERS.values(), ids=list(READERS))


@readers
def test_every_field_of_the_serializer_is_swept(reader: Reader):
    assert set(reader.values) == set(reader.serializer().fields)


@readers
def test_each_value_of_each_field_gets_what_the_serializer_gives_it(reader: Reader):
    for name, kinds in reader.values.items():
        for value in kinds + ODD:
            base = {} if name == "messages" else reader.base
            body = {**base, name: value}
            mine, its = reader.both(body)
            assert mine == its, body


@readers
def test_pairs_of_values_get_what_the_serializer_gives_them(reader: Reader):
    for first, second in itertools.combinations(reader.pairs, 2):
        for a, b in itertools.product(
            reader.values[first][:5], reader.values[second][:5]
        ):
            mine, its = reader.both({first: a, second: b})
            assert mine == its, (first, a, second, b)


@readers
def test_a_body_not_an_object_or_naming_an_unknown_field_gets_the_same_refusal(
    reader: Reader,
):
    for body in reader.odd_bodies:
        mine, its = reader.both(body)
        assert mine == its, body


@readers
def test_a_plain_body_is_read_without_the_serializer(reader: Reader):
    # The plain path must actually serve the common bodies, not defer them all.
    for body in reader.plain:
        assert typed(reader.module._plain(body)) == reader.both(body)[1][1]


def test_the_plain_path_gives_numbers_as_their_fields_make_them():
    valid = select_input({"query": "x", "min_score": 1, "max_cost_per_call": 0})
    assert type(valid["min_score"]) is float
    assert type(valid["max_cost_per_call"]) is float


KEYS = st.sampled_from([*SELECT_VALUES, "unknown"])
VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=70_000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet="ab -_é\t", max_size=6),
    st.lists(st.text(alphabet="ab -", max_size=4), max_size=3),
    st.sampled_from([v for values in SELECT_VALUES.values() for v in values[:3]]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, VALUE, max_size=6))
def test_any_select_body_gets_what_the_serializer_gives_it(body: dict[str, Any]):
    mine, its = READERS["select"].both(body)
    assert mine == its


# COPY (config.fast.copy_rows) and the audit row's INSERT (config.fast.insert,
# config.fast.beside, behind audit.services.record_event).

STORED_BY_THE_CHAIN = {"id", "seq", "prev_hash", "hash", "sealed_at", "key_id"}


def stored(rows: Any, *, leave: set[str]) -> list[dict[str, Any]]:
    return [
        {name: value for name, value in values(row).items() if name not in leave}
        for row in rows
    ]


def an_event(actor: Any, n: int) -> AuditEvent:
    return AuditEvent(
        event_type="tool_changed", actor=actor, actor_name="olga" if actor else "",
        request_id=uuid.UUID(int=n), catalog_slug="default", catalog_version=n,
        summary=f"change {n}", input={"when": timezone.now(), "none": None, "n": n},
        output={"id": uuid.UUID(int=n), "list": [1.5, "é"]}, created=timezone.now(),
    )  # fmt: skip


def new_tool(catalog: Catalog, name: str) -> Tool:
    return Tool(
        catalog=catalog, name=name, provider_name=name, content_hash="h",
        parameters=None, tags=["x", 1.5], annotations={"readOnlyHint": True},
    )  # fmt: skip


@pytest.mark.django_db
def test_copy_stores_the_rows_bulk_create_stores():
    olga = make_user("olga")
    copied = [an_event(olga if n % 2 else None, n) for n in range(4)]
    created = [an_event(olga if n % 2 else None, n) for n in range(4)]
    for mine, its in zip(copied, created, strict=True):
        its.created = mine.created
        its.input = mine.input
    copy_insert(copied)
    AuditEvent.objects.bulk_create(created)
    rows = list(AuditEvent.objects.filter(summary__startswith="change ").order_by("id"))
    assert len(rows) == 8
    assert stored(rows[:4], leave={"id"}) == stored(rows[4:], leave={"id"})
    catalog = make_sample_catalog("get_weather")
    tools = [new_tool(catalog, f"t{n}") for n in range(2)]
    copy_insert(tools, with_ids=True)
    assert [tool.pk for tool in tools] == sorted(tool.pk for tool in tools)
    saved = Tool.objects.bulk_create([new_tool(catalog, f"u{n}") for n in range(2)])
    moving = {"id", "name", "provider_name", "created", "updated"}
    read = [Tool.objects.get(pk=tool.pk) for tool in tools + saved]
    assert stored(read[:2], leave=moving) == stored(read[2:], leave=moving)
    assert all(tool.created is not None for tool in read)


def write_each_way(actor: Any) -> None:
    """The same event written by each of record_event's paths: ``save`` (soon, in
    a transaction), the INSERT made once, sent beside, and COPY."""
    fields: Any = {
        "actor": actor, "request_id": uuid.UUID(int=7), "catalog_slug": "default",
        "catalog_version": 3, "summary": "same", "output": {"n": [1, None, "é"]},
        "input": {"at": timezone.now().isoformat(), "none": None},
    }  # fmt: skip
    with transaction.atomic():
        record_event("selection", soon=True, **fields).wait()
    record_event("selection", **fields)
    record_event("selection", soon=True, **fields).wait()
    row = EventRow(summary="same", input=fields["input"], output=fields["output"])
    shared = {k: fields[k] for k in ("actor", "request_id", "catalog_slug")}
    record_event("selection", catalog_version=3, many=[row], **shared)


@pytest.mark.django_db(transaction=True)
def test_an_audit_row_written_each_way_is_the_row_save_writes_and_chains():
    olga = make_user("olga")
    write_each_way(olga)
    seal_pending()
    rows = list(AuditEvent.objects.filter(summary="same").order_by("id"))
    assert len(rows) == 4
    leave = STORED_BY_THE_CHAIN | {"created"}
    first, *others = stored(rows, leave=leave)
    assert all(other == first for other in others)
    assert all(row.seq is not None and row.hash for row in rows)
    assert verify_chain().ok
