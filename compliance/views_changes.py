"""The compliance console's links from a selection to what it depended on: a tool as
it was at one version (deleted tools too), a settings version's change, and the
change log of the catalogs the reader may audit.

Compliance and admins only; a catalog outside the reader's is refused (403) before
anything is looked up. A version that no record holds is said so in words (404)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_safe

from audit.changes import CHANGE_TYPES
from audit.choices import EventType
from catalog.models import Tool
from catalog.navigation import visible_catalogs
from compliance import display
from compliance.tool_versions import find_version, version_at
from compliance.views import _visible, auditor_required
from config.pages import paginate, render_page
from config.params import MAX_ID, whole_number
from identity.access import access_for


def _check_catalog(request: HttpRequest, catalog: str) -> None:
    if not access_for(request.user).may_see_catalog(catalog):
        raise PermissionDenied(f"catalog {catalog!r} is not one you may audit")


def _not_found(
    request: HttpRequest,
    kind: str,
    title: str,
    context: dict[str, Any],
    status: int = 404,
) -> HttpResponse:
    """A plain-words page saying which record is missing (``kind``: tool,
    selection or settings), with the 404 status."""
    context = {"kind": kind, "title": title, **context}
    return render_page(request, "audit/not_recorded.html", context, status=status)


def _int_param(request: HttpRequest, name: str) -> int | None:
    return whole_number(request.GET.get(name), MAX_ID)


@require_safe
@auditor_required
def tool_version(
    request: HttpRequest, catalog: str, name: str, version: int
) -> HttpResponse:
    """The tool as it stood at ``version``; ``?at=<selection event id>`` picks the
    one that selection saw if the name was deleted and made again."""
    _check_catalog(request, catalog)
    at = _int_param(request, "at")
    found = find_version(_visible(request), catalog, name, version, before_event=at)
    context: dict[str, Any] = {"catalog": catalog, "name": name, "version": version}
    if found is None:
        return _not_found(request, "tool", f"{name} version {version}", context)
    expected = request.GET.get("hash", "")
    definition = found.definition
    context |= {
        "found": found,
        "definition": definition,
        "schema_json": json.dumps(
            definition.get("parameters"), indent=2, ensure_ascii=False
        ),
        "annotations_json": json.dumps(
            definition.get("annotations") or {}, indent=2, ensure_ascii=False
        ),
        "expected_hash": expected,
        "hash_matches": bool(expected) and expected == found.content_hash,
        "exists_now": Tool.objects.filter(catalog__slug=catalog, name=name).exists(),
    }
    return render_page(request, "audit/tool_version.html", context)


@require_safe
@auditor_required
def tool_at_selection(request: HttpRequest, event_id: int, name: str) -> Any:
    """A tool named by a selection without its version (an exclusion): the version
    it had when the selection was recorded."""
    event = get_object_or_404(
        _visible(request), pk=event_id, event_type=EventType.SELECTION
    )
    version = version_at(_visible(request), event.catalog_slug, name, event.pk)
    if version is None:
        context = {"catalog": event.catalog_slug, "name": name, "selection": event}
        return _not_found(
            request, "selection", f"{name} at selection {event.pk}", context
        )
    url = reverse("audit:tool-version", args=[event.catalog_slug, name, version])
    return redirect(f"{url}?at={event.pk}")


@require_safe
@auditor_required
def settings_version(request: HttpRequest, catalog: str, version: int) -> Any:
    """The change that made a catalog's settings version ``version`` (its page
    shows the diff against the version before)."""
    _check_catalog(request, catalog)
    event = (
        _visible(request)
        .filter(
            event_type=EventType.SETTINGS,
            catalog_slug=catalog,
            output__contains={"settings_version": version},
        )
        .order_by("-pk")
        .first()
    )
    if event is not None:
        return redirect("audit:event-detail", event_id=event.pk)
    context = {"catalog": catalog, "settings_version": version}
    title = f"Settings version {version} of {catalog}"
    # Version 0 is not missing: it is the defaults, before any change.
    return _not_found(
        request, "settings", title, context, status=200 if version == 0 else 404
    )


@require_safe
@auditor_required
def change_log(request: HttpRequest) -> HttpResponse:
    """Every recorded change the reader may see, newest first (deleted tools too);
    ``?catalog=``, ``?tool=`` and ``?what=`` narrow it."""
    catalogs = [c.slug for c in visible_catalogs(request)]
    chosen = {k: request.GET.get(k, "").strip() for k in ("catalog", "tool", "what")}
    changes = _visible(request).filter(event_type__in=CHANGE_TYPES)
    if chosen["catalog"]:
        _check_catalog(request, chosen["catalog"])
        changes = changes.filter(catalog_slug=chosen["catalog"])
    if chosen["tool"]:
        changes = changes.filter(
            event_type=EventType.TOOL_CHANGED, input__contains={"tool": chosen["tool"]}
        )
    if chosen["what"]:
        if chosen["what"] not in CHANGE_TYPES:
            # Never ignore a filter: the reader would believe the list was narrowed.
            return HttpResponseBadRequest(
                f"what: must be one of {', '.join(CHANGE_TYPES)}"
            )
        changes = changes.filter(event_type=chosen["what"])
    page = paginate(request, changes.order_by("-pk"))
    rows = [
        {
            "event": e,
            "line": display.describe(e),
            "deleted": (e.input or {}).get("action") == "delete",
        }
        for e in page.object_list
    ]
    kinds = [(t, EventType(t).label) for t in CHANGE_TYPES]
    context = {"page": page, "rows": rows, "chosen": chosen}
    context |= {"catalogs": catalogs, "kinds": kinds}
    return render_page(request, "audit/change_log.html", context)
