"""Editing the claim mapping and the password switch (admins only), each change
one ``sign_in_settings`` event by its admin, in the same transaction.

Whoever adds, changes or removes a mapping must hold everything it gives, before
and after (the People page's rule: groups, their permissions, catalogs), so the
mapping is no way round it; a mapping no admin of yours could give is not shown
to you. A change reaches the people it names at once: each one who signed in
with that claim value has their groups and catalogs worked out again from every
mapping (``access_changed``, ``via`` "sso mapping"), so removing a mapping takes
its access away now, not at their next sign-in.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404

from audit.actors import Actor
from audit.choices import EventType
from audit.services import record_event
from sso.mapping import grant_for
from sso.models import ClaimMapping, Identity, SignInPolicy
from sso.people import Refused, access_of, existing_catalogs, mapping_refusal, set_grant
from sso.policy import POLICY_PK, sso_on

VIA = "sso mapping"
ADMIN_RULE = "managing sign-in needs the admin scope"
EVERY_CATALOG_RULE = (
    "password_login: only an admin of every catalog turns password sign-in on or off"
)


def mappings_visible_to(actor: Actor) -> QuerySet[ClaimMapping]:
    """The mappings ``actor`` (an admin) may see and change: those it holds all of."""
    _require_admin(actor)
    rows = ClaimMapping.objects.prefetch_related("groups")
    mine = [row.pk for row in rows if not _refusal(actor, row)]
    return ClaimMapping.objects.filter(pk__in=mine).prefetch_related("groups")


def get_mapping_for_user(actor: Actor, pk: int) -> ClaimMapping:
    """The mapping if ``actor`` may change it, else 404 (never a hint)."""
    mapping = mappings_visible_to(actor).filter(pk=pk).first()
    if mapping is None:
        raise Http404("mapping: no such mapping")
    return mapping


def create_mapping(
    value: str,
    *,
    groups: Sequence[str],
    catalogs: Sequence[str] | None,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> ClaimMapping:
    """Map a claim value to these groups and catalogs (None: every catalog); the
    audit rows carry ``request_id``, the request that asked."""
    _require_admin(actor)
    rows, slugs = _checked(actor, groups, catalogs)
    with transaction.atomic():
        mapping = ClaimMapping(value=value, catalogs=slugs)
        mapping.full_clean()
        mapping.save()
        mapping.groups.set(rows)
        _record(actor, "create", mapping, request_id, before=None)
        _reapply([mapping.value], request_id)
    return mapping


def update_mapping(
    mapping: ClaimMapping,
    *,
    groups: Sequence[str],
    catalogs: Sequence[str] | None,
    actor: Actor,
    request_id: uuid.UUID | None = None,
) -> ClaimMapping:
    """Change what a claim value gives."""
    _require_admin(actor)
    _refuse(actor, mapping)
    rows, slugs = _checked(actor, groups, catalogs)
    with transaction.atomic():
        before = mapping_state(mapping)
        mapping.catalogs = slugs
        mapping.full_clean()
        mapping.save(update_fields=["catalogs", "updated"])
        mapping.groups.set(rows)
        _record(actor, "update", mapping, request_id, before=before)
        _reapply([mapping.value], request_id)
    return mapping


def delete_mapping(
    mapping: ClaimMapping, *, actor: Actor, request_id: uuid.UUID | None = None
) -> None:
    """Remove a mapping: the people it named keep only what others give."""
    _require_admin(actor)
    _refuse(actor, mapping)
    with transaction.atomic():
        before = mapping_state(mapping)
        value, pk = mapping.value, mapping.pk
        mapping.delete()
        mapping.pk = pk
        _record(actor, "delete", mapping, request_id, before=before, after=None)
        _reapply([value], request_id)


def set_password_login(
    on: bool, *, actor: Actor, request_id: uuid.UUID | None = None
) -> SignInPolicy:
    """Turn password sign-in on or off in the console (the break-glass admin keeps
    it; ``QUIVER_PASSWORD_LOGIN=false`` keeps it off whatever this says)."""
    access = _require_admin(actor)
    if access.catalogs is not None:
        raise Refused.of(EVERY_CATALOG_RULE)
    if not on and not sso_on():
        raise ValidationError(
            {"password_login": "turn single sign-on on first (QUIVER_OIDC_ISSUER)"}
        )
    with transaction.atomic():
        policy, _ = SignInPolicy.objects.select_for_update().get_or_create(pk=POLICY_PK)
        if policy.password_login != on:
            before = policy.password_login
            policy.password_login = on
            policy.save(update_fields=["password_login", "updated"])
            record_event(
                EventType.SIGN_IN_SETTINGS,
                actor=actor,
                request_id=request_id,
                summary=f"password sign-in turned {'on' if on else 'off'}",
                input={"action": "password_login", "before": before},
                output={"password_login": on},
            )
    return policy


def mapping_state(mapping: ClaimMapping) -> dict[str, Any]:
    return {
        "value": mapping.value,
        "groups": sorted(mapping.groups.values_list("name", flat=True)),
        "catalogs": "*" if mapping.catalogs is None else list(mapping.catalogs),
    }


def _require_admin(actor: Actor) -> Any:
    access = access_of(actor)
    if not access.is_admin:
        raise PermissionDenied(ADMIN_RULE)
    return access


def _refusal(actor: Actor, mapping: ClaimMapping) -> str:
    names = [group.name for group in mapping.groups.all()]
    return mapping_refusal(actor, names, mapping.catalogs)


def _refuse(actor: Actor, mapping: ClaimMapping) -> None:
    problem = _refusal(actor, mapping)
    if problem:
        raise Refused.of(problem)


def _checked(
    actor: Actor, groups: Sequence[str], catalogs: Sequence[str] | None
) -> tuple[list[Group], list[str] | None]:
    """The groups and catalogs asked for, if the actor may give them and they
    exist (asked in that order, so unknown and not held read the same)."""
    problem = mapping_refusal(actor, list(groups), catalogs)
    if problem:
        raise Refused.of(problem)
    rows = list(Group.objects.filter(name__in=list(groups)))
    unknown = sorted(set(groups) - {row.name for row in rows})
    if unknown:
        raise ValidationError({"groups": f"no group {', '.join(unknown)}"})
    if catalogs is None:
        return rows, None
    if not catalogs:
        raise ValidationError(
            {"catalogs": "name at least one catalog, or choose all catalogs"}
        )
    missing = sorted(set(catalogs) - set(existing_catalogs(catalogs)))
    if missing:
        raise ValidationError({"catalogs": f"no catalog {', '.join(missing)}"})
    return rows, sorted(set(catalogs))


def _record(
    actor: Actor,
    action: str,
    mapping: ClaimMapping,
    request_id: uuid.UUID | None,
    *,
    before: dict[str, Any] | None,
    after: Any = "now",
) -> None:
    state = mapping_state(mapping) if after == "now" else after
    record_event(
        EventType.SIGN_IN_SETTINGS,
        actor=actor,
        request_id=request_id,
        summary=f"claim value {mapping.value!r} mapping {action}d"[:300],
        input={"action": action, "mapping_id": mapping.pk, "before": before},
        output={"mapping_id": mapping.pk, "after": state},
    )


def _reapply(values: Iterable[str], request_id: uuid.UUID | None) -> None:
    """Work out again the access of everyone whose last sign-in named these values
    (their ``access_changed`` rows carry the request's id too)."""
    named = Identity.objects.filter(claim_values__overlap=list(values))
    for identity in named.select_related("user").order_by("pk"):
        groups, catalogs = grant_for(identity.claim_values).access()
        set_grant(
            identity.user,
            groups=groups,
            catalogs=catalogs,
            via=VIA,
            request_id=request_id,
        )
