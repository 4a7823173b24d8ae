"""A catalog's selection settings: who may read them; writes validated, versioned,
with history."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404

from audit.actors import Actor, actor_name, stored_user
from audit.changes import field_changes
from audit.choices import EventType
from audit.services import record_event
from catalog.models import Catalog, Tool
from identity.access import access_for
from selection.answers import SelectionAnswer
from selection.engine.settings import EngineSettings, SettingsError
from selection.engine.types import SelectionRequest
from selection.models import SelectionSettings, SelectionSettingsChange
from selection.registry import check_settings_change
from selection.services.select import select_tools

REASON_MAX = 500
SETTINGS_READERS = (
    "permission: selection settings are read by curators, compliance and admins "
    "(they name tools an agent may not know of)"
)


def refuse_unless_whole_catalog(reader: Any) -> None:
    """403 unless the reader sees every tool of its catalogs: settings name tools
    (``core_tools``, ``micro_anchors[].tools`` and patterns, ``transitions``)
    that an agent's roles or unsafe permission may hide from it, so agents do not
    read them at all rather than a filtered copy that could still hint."""
    if not access_for(reader).sees_whole_catalog:
        raise PermissionDenied(SETTINGS_READERS)


def current_settings(catalog: Catalog) -> tuple[dict[str, Any], int]:
    """The full effective settings (defaults filled in) and their version."""
    engine_settings, version = SelectionSettings.objects.effective_for(catalog)
    return engine_settings.to_dict(), version


def checked_settings(data: dict[str, Any]) -> EngineSettings:
    """``data`` as engine settings, or a ValidationError naming every bad field
    (``settings.<path>: <rule>``)."""
    try:
        engine_settings = EngineSettings.from_dict(data)
    except SettingsError as exc:
        raise ValidationError(
            {f"settings.{k}": [f"settings.{k}: {v}"] for k, v in exc.errors.items()}
        ) from exc
    problems = engine_settings.validate()
    if problems:
        raise ValidationError(
            {f"settings.{k}": [f"settings.{k}: {v}"] for k, v in problems.items()}
        )
    return engine_settings


def update_selection_settings(
    catalog: Catalog,
    data: dict[str, Any],
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    reason: str = "",
    restored_from: int | None = None,
    accept_regression: str | None = None,
    note: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], int]:
    """Replace the catalog's settings; every bad field is named, nothing saved.

    ``reason``: the curator's note, kept with the version and in the audit row;
    ``restored_from``: the version a restore brings back (recorded the same way).
    A catalog with labels passes the regression gate first (learning's, through
    selection.registry: a drop of its labelled NDCG@10 is refused unless
    ``accept_regression`` gives a reason); the gate's report and ``note`` (e.g.
    the learnt model applied) go into the audit event.
    """
    engine_settings = checked_settings(data)
    if len(reason) > REASON_MAX:
        raise ValidationError(
            {"reason": [f"reason: must be at most {REASON_MAX} characters"]}
        )
    stored = SelectionSettings.objects.stored_for(catalog).data or {}
    gate = (
        None  # the trust policy alone ranks nothing: no gate to pass
        if _without_trust(stored) == _without_trust(data)
        else check_settings_change(
            catalog, data, accept_regression_reason=accept_regression
        )
    )
    with transaction.atomic():
        row, _ = SelectionSettings.objects.select_for_update().get_or_create(
            catalog=catalog, defaults={"version": 0}
        )
        before = row.data
        row.data = data
        row.version += 1
        row.updated_by = stored_user(actor)
        row.save(update_fields=["data", "version", "updated", "updated_by"])
        SelectionSettingsChange.objects.create(
            catalog=catalog,
            version=row.version,
            before=before,
            after=data,
            actor_name=actor_name(actor),
            reason=reason,
        )
        # Every later selection names this settings version; compliance reads
        # here which change made it, by whom, from what.
        record_event(
            EventType.SETTINGS,
            actor=actor,
            request_id=request_id,
            catalog_slug=catalog.slug,
            catalog_version=catalog.version,
            summary=f"selection settings of {catalog.slug} -> version {row.version}"
            + (f" (restored version {restored_from})" if restored_from else ""),
            input={
                "before": before,
                "after": data,
                **({"reason": reason} if reason else {}),
                **({"restored_from": restored_from} if restored_from else {}),
                **({"gate": gate} if gate is not None else {}),
                **(note or {}),
            },
            output={"settings_version": row.version},
        )
    return engine_settings.to_dict(), row.version


def _without_trust(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "trust"}


def update_trust_policy(
    catalog: Catalog,
    trust: dict[str, Any],
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    reason: str = "",
) -> tuple[dict[str, Any], int]:
    """A new settings version whose trust policy (screening.policy) is
    ``trust``, the other settings as they are; audited as every settings change
    (the before and after name what changed)."""
    stored = dict(SelectionSettings.objects.stored_for(catalog).data or {})
    stored["trust"] = trust
    return update_selection_settings(
        catalog,
        stored,
        actor=actor,
        request_id=request_id,
        reason=reason or "trust policy changed",
    )


def get_settings_version(catalog: Catalog, version: int) -> SelectionSettingsChange:
    """Version ``version`` of the catalog's settings, else 404 naming it."""
    history = SelectionSettingsChange.objects.history_of(catalog)
    # A number past the column's range names no version (and must not reach SQL).
    change = history.filter(version=version).first() if 0 < version < 2**31 else None
    if change is None:
        raise Http404(f"version: {catalog.slug!r} has no settings version {version}")
    return change


def restore_selection_settings(
    catalog: Catalog,
    version: int,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    accept_regression: str | None = None,
) -> tuple[dict[str, Any], int]:
    """A NEW version whose settings equal version ``version``'s (history is never
    rewritten), audited as a settings change like any save (the regression gate
    included)."""
    change = get_settings_version(catalog, version)
    return update_selection_settings(
        catalog,
        dict(change.after),
        actor=actor,
        request_id=request_id,
        reason=f"restored version {version}",
        restored_from=version,
        accept_regression=accept_regression,
    )


def settings_in_full(data: Any) -> Any:
    """Stored settings hold only what differs from the defaults: fill them in, so
    a field going back to its default shows its value (raw if it cannot load)."""
    if not isinstance(data, dict):
        return data
    try:
        return EngineSettings.from_dict(data).to_dict()
    except (SettingsError, TypeError, ValueError):
        return data


def version_changes(change: SelectionSettingsChange) -> list[dict[str, Any]]:
    """What a version changed against the one before, setting by setting (both
    filled in with the defaults, so a setting going back to its default shows)."""
    before, after = settings_in_full(change.before), settings_in_full(change.after)
    return field_changes(before, after)


def try_settings(
    catalog: Catalog,
    request: SelectionRequest,
    proposed: EngineSettings,
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> tuple[SelectionAnswer, SelectionAnswer]:
    """The answers under the saved and under the proposed settings, side by side.
    Nothing is saved; each answer writes its selection row as Try it does (every
    answer given has one), the proposed one naming the settings it ranked under."""
    options: dict[str, Any] = {
        "fmt": "canonical",
        "actor": actor,
        "request_id": request_id,
    }
    current = select_tools(catalog, request, **options)
    trial = select_tools(
        catalog, request, **options, channel="try-settings", proposed=proposed
    )
    return current, trial


def pickable_tool_names(catalog: Catalog, limit: int) -> list[str] | None:
    """The catalog's tool names, sorted, for a form to pick from; None when it
    has more than ``limit`` (then names are typed, and checked by
    ``known_tool_names``)."""
    names = Tool.objects.filter(catalog=catalog).order_by("name")
    found = list(names.values_list("name", flat=True)[: limit + 1])
    return None if len(found) > limit else found


def known_tool_names(catalog: Catalog, names: Iterable[str]) -> set[str]:
    """Which of ``names`` are tools of the catalog."""
    wanted = set(names)
    found = Tool.objects.filter(catalog=catalog, name__in=wanted)
    return set(found.values_list("name", flat=True))
