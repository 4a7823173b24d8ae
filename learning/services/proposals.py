"""Labels proposed from use: a selection whose offered tool was then called and
validated is a request whose right tool is known.

The evidence is read from the audit trail (valid ``validation`` and ``ran``
``tool_call`` events linking a ``selection_id``), and each such selection becomes one
proposed label with its request and the called tools it offered. A selection is
proposed once ever (a unique constraint), a request already labelled is skipped, and
proposals count only once a curator accepts them.
docs/how-to/labels-and-evaluation.md.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.actors import Actor
from audit.choices import EventType
from audit.models import AuditEvent
from catalog.models import Catalog
from learning.models import Label, LabelOrigin, LabelStatus
from learning.services.labels import (
    existing_keys,
    record_labels_changed,
    request_key,
)

MAX_SCAN = 20_000


def called_tools(catalog: Catalog, since: Any) -> dict[str, set[str]]:
    """Selection id -> the tools validly called (or run) in answer to it."""
    events = AuditEvent.objects.filter(catalog_slug=catalog.slug, created__gte=since)
    called: dict[str, set[str]] = defaultdict(set)
    validations = events.filter(event_type=EventType.VALIDATION).order_by("-id")
    for output in validations.values_list("output", flat=True)[:MAX_SCAN]:
        selection = output.get("selection_id") if isinstance(output, dict) else None
        for call in (output.get("calls") or []) if selection else []:
            if isinstance(call, dict) and call.get("valid") is True:
                called[str(selection)].add(str(call.get("tool")))
    calls = events.filter(event_type=EventType.TOOL_CALL).order_by("-id")
    for given, output in calls.values_list("input", "output")[:MAX_SCAN]:
        if not isinstance(given, dict) or not isinstance(output, dict):
            continue
        if given.get("selection_id") and output.get("outcome") == "ran":
            called[str(given["selection_id"])].add(str(given.get("tool")))
    return called


def _proposals(catalog: Catalog, called: dict[str, set[str]]) -> list[Label]:
    """One label per selection that offered a tool then called."""
    ids = []
    for text in called:
        try:
            ids.append(uuid.UUID(text))
        except ValueError:
            continue
    selections = AuditEvent.objects.filter(
        event_type=EventType.SELECTION, catalog_slug=catalog.slug, selection_id__in=ids
    ).values_list("selection_id", "input", "output")
    labels = []
    for selection_id, given, output in selections.iterator():
        offered = {str(p.get("name")) for p in (output or {}).get("tools") or []}
        tools = sorted(called[str(selection_id)] & offered)
        request = (given or {}).get("request") or {}
        query, messages = request.get("query"), request.get("messages")
        if not tools or not (isinstance(query, str) and query.strip() or messages):
            continue
        labels.append(
            Label(
                catalog=catalog,
                query=query if isinstance(query, str) and not messages else "",
                messages=messages or None,
                tools=tools,
                origin=LabelOrigin.USE,
                status=LabelStatus.PROPOSED,
                selection_id=selection_id,
            )
        )
    return labels


def find_proposals(
    catalog: Catalog, *, actor: Actor = None, request_id: uuid.UUID | None = None
) -> int:
    """Propose labels from recent use (idempotent); one audit event when any
    were proposed. Returns how many new proposals."""
    days = int(settings.QUIVER_LABEL_PROPOSAL_DAYS)
    since = timezone.now() - timedelta(days=days)
    found = _proposals(catalog, called_tools(catalog, since))
    with transaction.atomic():
        done = set(
            Label.objects.filter(
                catalog=catalog,
                selection_id__in=[label.selection_id for label in found],
            ).values_list("selection_id", flat=True)
        )
        fresh = [label for label in found if label.selection_id not in done]
        known = existing_keys(
            catalog, (request_key(label.query, label.messages) for label in fresh)
        )
        fresh = [x for x in fresh if request_key(x.query, x.messages) not in known]
        rows = Label.objects.bulk_create(fresh, ignore_conflicts=True)
        added = Label.objects.filter(
            catalog=catalog, selection_id__in=[r.selection_id for r in rows]
        ).count()
        if added:
            record_labels_changed(
                catalog,
                "propose",
                actor,
                request_id,
                {"days": days, "selections_with_calls": len(found)},
                {"proposed": added},
            )
    return added
