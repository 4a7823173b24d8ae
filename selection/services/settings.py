"""A catalog's selection settings: who may read them; writes validated, versioned,
with history."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from audit.choices import EventType
from audit.services import record_event
from catalog.access import Actor, access_for, actor_name, stored_user
from catalog.models import Catalog
from selection.engine.settings import EngineSettings, SettingsError
from selection.models import SelectionSettings, SelectionSettingsChange

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


def update_selection_settings(
    catalog: Catalog,
    data: dict[str, Any],
    *,
    actor: Actor,
    request_id: uuid.UUID | None = None,
    accept_regression: str | None = None,
    note: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], int]:
    """Replace the catalog's settings; every bad field is named, nothing saved.

    A catalog with labels passes learning.gate first (a drop of its labelled
    NDCG@10 is refused unless ``accept_regression`` gives a reason); the gate's
    report and ``note`` (e.g. the learnt model applied) go into the audit event."""
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
    from learning.gate import check_change

    gate = check_change(catalog, data, accept_regression_reason=accept_regression)
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
        )
        # Every later selection names this settings version; compliance reads
        # here which change made it, by whom, from what.
        record_event(
            EventType.SETTINGS,
            actor=actor,
            request_id=request_id,
            catalog_slug=catalog.slug,
            catalog_version=catalog.version,
            summary=f"selection settings of {catalog.slug} -> version {row.version}",
            input={
                "before": before,
                "after": data,
                **({"gate": gate} if gate is not None else {}),
                **(note or {}),
            },
            output={"settings_version": row.version},
        )
    return engine_settings.to_dict(), row.version
