"""Read queries of the audit log, as queryset methods, and the expressions its
indexes are built on."""

from __future__ import annotations

from typing import Any, Protocol

from django.apps import apps
from django.contrib.postgres.expressions import ArraySubquery
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.lookups import DataContains
from django.db import models
from django.db.models import F, Func, Lookup, Q, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from audit.choices import EventType
from config.lookups import any_of

TOKENS = ArrayField(models.TextField())
# The id of the ``started`` event a tool call's outcome names (calls.records);
# the partial index ``audit_event_call_outcome`` is built on this expression.
CALL_ID = Cast(KT("input__call_id"), models.BigIntegerField())
CALL_OUTCOME = Q(event_type=EventType.TOOL_CALL) & Q(input__has_key="call_id")
# The person behind a row: the person an agent acted for (audit.acting), else the
# actor's own name; the index ``audit_event_person`` is built on it, so the
# filter by person finds a person's own rows and their agents' alike.
PERSON = Coalesce(
    KT("input__acting_for__person"), F("actor_name"), output_field=models.TextField()
)


class SearchTokens(Func):
    """The words the audit filters look for in one event, computed from its
    content by the database function of audit/migrations/0007. A sealed row
    stores the result in ``search_tokens`` (0010, filled at sealing since 0012);
    the filters compute it for the few rows not sealed yet. Since 0013 the
    trigrams come from the first 2,000 characters of each text, in one linear
    pass: a text filter finds a row by a term in that prefix."""

    function = "audit_search_tokens"
    output_field = TOKENS  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__(
            F("event_type"), F("actor_name"), F("summary"), F("input"), F("output")
        )


class Trigrams(Func):
    """A searched text's trigrams, made as ``SearchTokens`` makes them."""

    function = "audit_trigrams"
    output_field = TOKENS  # type: ignore[assignment]


def has_tokens(*tokens: str) -> Q:
    """Events whose search tokens include all of ``tokens`` (the GIN index
    ``audit_event_search``): ``p:``/``x:`` a tool offered/left out, ``r:`` a reason
    left out, ``s:`` the selection a validation checks."""
    return _tokens_hold(Value(list(tokens), output_field=TOKENS))


def _tokens_hold(wanted: Value | Func) -> Q:
    """A sealed row's stored tokens hold ``wanted``, or a row not sealed yet (its
    column is empty until then, audit/migrations/0012) computes them and they do.

    The unsealed rows are found once per query (an InitPlan over the partial
    index ``audit_event_unsealed``: the last second's rows) and each row is then
    checked against that short id array: an OR on the computed tokens instead
    was priced per row, so the planner ran the text filters' JSON parsing first
    and went parallel, many times slower at a million events (bench/README.md)."""
    events = apps.get_model("audit", "AuditEvent")._default_manager
    unsealed = events.filter(
        Q(hash__isnull=True) & Q(DataContains(SearchTokens(), wanted))
    )
    ids = ArraySubquery(unsealed.values("id"))
    return Q(search_tokens__contains=wanted) | Q(InArray(F("id"), ids))


class InArray(Lookup):
    """``lhs = ANY(rhs)``: an array the planner can probe through an index."""

    lookup_name = "in_array"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", (*lhs_params, *rhs_params)


def may_contain_text(prefix: str, text: str) -> Q:
    """A fast necessary condition for "the ``prefix`` text contains ``text``, case
    aside": it holds every trigram of ``text`` (``a:`` the actor's name, ``t:`` the
    summary or the query). Texts under 3 characters have none, so they get no
    condition (their own ``icontains`` decides, by a scan)."""
    if len(text) < 3:
        return Q()
    return _tokens_hold(Trigrams(Value(prefix), Value(text)))


class Reader(Protocol):
    """What the log asks of a reader's access (identity.access.Access answers)."""

    @property
    def can_audit(self) -> bool: ...

    @property
    def catalogs(self) -> tuple[str, ...] | None: ...


class AuditEventQuerySet(models.QuerySet):
    def visible_to(self, access: Reader) -> AuditEventQuerySet:
        """Events a compliance reader may see: only its catalogs' when it is limited
        to some (events of no catalog, such as key changes, need every catalog)."""
        if not access.can_audit:
            return self.none()
        if access.catalogs is None:
            return self
        return self.filter(any_of("catalog_slug", access.catalogs))

    def validations_of(self, selection_id: str) -> AuditEventQuerySet:
        """The tool-call validations that name this selection."""
        link = {"selection_id": selection_id}
        return self.filter(
            has_tokens(f"s:{selection_id}"),
            Q(input__contains=link) | Q(output__contains=link),
            event_type=EventType.VALIDATION,
        )

    def calls_of(self, selection_id: str) -> AuditEventQuerySet:
        """The tool calls made through Quiver that name this selection (their
        ``input.selection_id``; the column is the selection's own), one event
        each: how it ended, or its ``started`` event while it has no outcome."""
        calls = self.filter(
            event_type=EventType.TOOL_CALL,
            input__contains={"selection_id": selection_id},
        )
        return calls.exclude(Q(output__contains={"outcome": "started"}) & _ended())

    def calls_without_outcome(self) -> AuditEventQuerySet:
        """``started`` events no outcome names yet: calls still running, or
        whose process stopped mid-call (calls.attempts sweeps them)."""
        return self.filter(
            ~_ended(),
            event_type=EventType.TOOL_CALL,
            output__contains={"outcome": "started"},
        )


def _ended() -> Q:
    """The event is a ``started`` event some outcome names (by the index
    ``audit_event_call_outcome``)."""
    model = apps.get_model("audit", "AuditEvent")
    outcomes = model.objects.filter(CALL_OUTCOME).annotate(started=CALL_ID)
    return Q(models.Exists(outcomes.filter(started=models.OuterRef("pk"))))
