"""The audit log's filters, parsed in one place for the console, the API and the
export: a form whose fields are the filter names, so an unknown name or a bad value
is named the same way everywhere.

Tool, reason, actor and text filters go through the GIN index of the events'
search tokens (the column ``search_tokens``, audit/migrations/0010): a tool or a
reason is one exact token; an actor or a text is first narrowed to the events
holding all its trigrams, then matched as ``icontains`` did (``_contains``). The
rare yes/no filters (degraded, no tool, invalid calls) each have a partial index
whose condition is the filter's own ``Q``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta
from typing import Any

from django import forms
from django.db.models import Expression, F, Q, Value
from django.db.models.fields.json import KT
from django.db.models.functions import StrIndex, Upper
from django.db.models.lookups import Exact, GreaterThan
from django.utils import timezone

from audit.choices import CALL_OUTCOMES, CALL_STARTED, EventType
from audit.querysets import PERSON, AuditEventQuerySet, has_tokens, may_contain_text
from config.params import DayField

_ANY = [("", "Any")]
YES_NO = [*_ANY, ("yes", "Yes"), ("no", "No")]
# Parameters that are not filters but that the list or the export accept.
PAGING = frozenset({"page"})
EXPORTING = frozenset({"format"})


class FilterError(ValueError):
    """Filters refused: an unknown name (never silently ignored) or a bad value,
    each under its parameter's name."""

    def __init__(self, fields: dict[str, list[str]]) -> None:
        self.fields = fields
        name, messages = next(iter(fields.items()))
        super().__init__(f"{name}: {messages[0]}")


class AuditFilterForm(forms.Form):
    """Every filter of the audit log, labelled in plain words."""

    q = forms.CharField(required=False, label="Search", max_length=200)
    since = DayField(required=False, label="From (day)")
    until = DayField(required=False, label="To (day)")
    event_type = forms.ChoiceField(
        required=False, label="What", choices=_ANY + EventType.choices
    )
    actor = forms.CharField(required=False, label="Who", max_length=150)
    person = forms.CharField(
        required=False, label="Person (and their agents)", max_length=150
    )
    catalog = forms.ChoiceField(required=False, label="Catalog")
    tool = forms.CharField(required=False, label="Tool offered", max_length=200)
    excluded_tool = forms.CharField(
        required=False, label="Tool left out", max_length=200
    )
    reason = forms.CharField(required=False, label="Reason left out", max_length=100)
    degraded = forms.ChoiceField(required=False, label="Degraded", choices=YES_NO)
    cached = forms.ChoiceField(required=False, label="From cache", choices=YES_NO)
    no_tools = forms.BooleanField(required=False, label="No tool offered")
    invalid_calls = forms.BooleanField(required=False, label="Invalid tool calls")
    outcome = forms.ChoiceField(
        required=False,
        label="Tool call outcome",
        choices=_ANY
        + [(name, name.replace("_", " ")) for name in (*CALL_OUTCOMES, CALL_STARTED)],
    )
    request_id = forms.UUIDField(required=False, label="Request id")
    selection_id = forms.UUIDField(required=False, label="Selection id")

    def __init__(
        self, *args: Any, catalogs: Iterable[str] | None = None, **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        # The API takes any slug (scoping decides what it sees); the console
        # offers the caller's catalogs.
        if catalogs is None:
            self.fields["catalog"] = forms.SlugField(required=False, label="Catalog")
            return
        field = self.fields["catalog"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = _ANY + [(slug, slug) for slug in catalogs]

    @property
    def is_filtered(self) -> bool:
        return any(self.data.get(name) for name in self.fields)

    def apply(self, events: AuditEventQuerySet) -> AuditEventQuerySet:
        """The events matching the valid filters (call ``is_valid`` first)."""
        data = {k: v for k, v in self.cleaned_data.items() if v not in ("", None)}
        return events.filter(filter_q(data))


def filter_events(
    events: AuditEventQuerySet,
    params: Mapping[str, Any],
    *,
    extra: frozenset[str] = PAGING,
) -> AuditEventQuerySet:
    """``events`` narrowed by query parameters, or ``FilterError`` naming every
    unknown parameter (``extra`` are the caller's own, such as ``page``) or the
    first bad value."""
    unknown = sorted(set(params) - set(AuditFilterForm.base_fields) - extra)
    if unknown:
        raise FilterError({name: ["not a filter of the audit log"] for name in unknown})
    form = AuditFilterForm({k: v for k, v in params.items() if k not in extra})
    if not form.is_valid():
        raise FilterError(
            {name: [str(e) for e in errs] for name, errs in form.errors.items()}
        )
    return form.apply(events)


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def filter_q(data: Mapping[str, Any]) -> Q:
    """One ``Q`` for cleaned filter values (only the ones given)."""
    q = Q()
    if "since" in data:
        q &= Q(created__gte=_day_start(data["since"]))
    if "until" in data:
        q &= Q(created__lt=_day_start(data["until"] + timedelta(days=1)))
    exact = {"event_type": "event_type", "catalog": "catalog_slug"}
    exact |= {"request_id": "request_id", "selection_id": "selection_id"}
    for name, column in exact.items():
        if name in data:
            q &= Q(**{column: data[name]})
    if "actor" in data:
        who = data["actor"]
        q &= may_contain_text("a:", who) & _contains("actor_name", who)
    if "person" in data:
        # Exact, by the index on PERSON: their own rows and their agents'.
        q &= Q(Exact(PERSON, data["person"]))
    if "q" in data:
        text = data["q"]
        q &= may_contain_text("t:", text) & (
            _contains("summary", text) | _contains(KT("input__request__query"), text)
        )
    return q & _selection_q(data)


def _contains(column: str | Expression, text: str) -> Q:
    """``column`` contains ``text``, case aside: ``icontains``, written as
    ``strpos(upper(column), upper(text)) > 0`` (the same test, wildcards taken
    literally), which the planner prices as a plain 1-in-3 condition. It prices
    ``LIKE '%text%'`` as rare, and times the trigrams' own estimate, so a common
    name or word (mostly the same events as its trigrams) looked rare and was
    served by sorting every match instead of walking the newest first."""
    upper = Upper(F(column) if isinstance(column, str) else column)
    return Q(GreaterThan(StrIndex(upper, Upper(Value(text))), 0))


def _selection_q(data: Mapping[str, Any]) -> Q:
    """Filters on what a selection answered, or on a validation's verdict."""
    q = Q()
    selection = Q(event_type=EventType.SELECTION)
    # Each token stands for ``output @> {"tools": [{"name": tool}]}`` (p:),
    # ``{"excluded": [{"name": tool}]}`` (x:) or ``[{"reason": reason}]`` (r:).
    # Selections only: the tokens exist for no other event type, so no condition
    # on the type (which the planner would AND in from its own index, for nothing).
    for name, prefix in (("tool", "p:"), ("excluded_tool", "x:"), ("reason", "r:")):
        if name in data:
            q &= has_tokens(prefix + data[name])
    for name in ("degraded", "cached"):
        if name in data:
            q &= selection & Q(output__contains={name: data[name] == "yes"})
    if data.get("no_tools"):
        q &= selection & Q(output__tools=[])
    if data.get("invalid_calls"):
        q &= Q(event_type=EventType.VALIDATION, output__contains={"valid": False})
    if "outcome" in data:
        # Served by the (event_type, created) index: tool calls only, newest first.
        outcome = {"outcome": data["outcome"]}
        q &= Q(event_type=EventType.TOOL_CALL, output__contains=outcome)
    return q
