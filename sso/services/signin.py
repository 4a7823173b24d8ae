"""Signing people in and out, and every refusal where a decision was made; each
an audit event in the transaction that decides it.

A single sign-on sign-in finds the person by the provider's issuer and subject
(never by an email or a username), makes them on their first sign-in and brings
their groups and catalogs up to date from the claim mapping (one
``access_changed`` event, ``via`` "sso", when anything changed), then signs them
in. A claim that maps to nothing signs nobody in: a person who had access loses
it (no groups, no catalogs), and nobody is made. A deactivated person stays out.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.choices import EventType
from audit.services import record_event
from sso.mapping import Grant, claim_values, grant_for, kept_values
from sso.models import Identity
from sso.oidc import Verified
from sso.people import SERVICE_USER_PREFIX, set_grant, system_changes
from sso.policy import break_glass_name

VIA = "sso"
NO_ACCESS = "mapping: your groups at the provider map to no Quiver group or catalog"
DEACTIVATED = "person: deactivated in Quiver"
SHOWN_VALUES = 50
USERNAME_CHARS = re.compile(r"[^\w.@+-]")


@dataclass
class Outcome:
    """A sign-in's answer: the person signed in, or why nobody was."""

    person: Any = None
    created: bool = False
    refusal: str = ""
    claim_values: list[str] = field(default_factory=list)


def sign_in_verified(
    verified: Verified,
    *,
    groups_claim: str,
    request_id: uuid.UUID | None,
    then: Callable[[Any], None],
) -> Outcome:
    """Sign in the person the provider vouched for; ``then(person)`` (Django's
    login) runs in the same transaction, so no session outlives a rollback."""
    values = claim_values(verified.claims, groups_claim)
    for attempt in (1, 2):
        try:
            with transaction.atomic():
                return _sign_in(verified, values, request_id, then)
        except IntegrityError:
            # A first sign-in of the same person beside this one made them.
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _sign_in(
    verified: Verified,
    values: list[str],
    request_id: uuid.UUID | None,
    then: Callable[[Any], None],
) -> Outcome:
    identity = (
        Identity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=verified.issuer, subject=verified.subject)
        .first()
    )
    person = identity.user if identity is not None else None
    if person is not None and not person.is_active:
        _refuse(DEACTIVATED, verified, values, person, request_id)
        return Outcome(refusal=DEACTIVATED, claim_values=values)
    grant = grant_for(values)
    if grant.empty:
        if identity is not None:
            with system_changes(VIA, request_id):
                set_grant(identity.user, groups=[], catalogs=[], via=VIA)
            _remember(identity, values, grant)
        _refuse(NO_ACCESS, verified, values, person, request_id)
        return Outcome(refusal=NO_ACCESS, claim_values=values)
    created = identity is None
    with system_changes(VIA, request_id):
        if identity is None:
            person = _new_person(verified)
            identity = Identity(
                user=person, issuer=verified.issuer, subject=verified.subject
            )
        groups, catalogs = grant.access()
        set_grant(identity.user, groups=groups, catalogs=catalogs, via=VIA)
    _remember(identity, values, grant)
    _keep_email(identity.user, verified.claims)
    _record_sign_in(identity, grant, request_id, created=created)
    then(identity.user)
    return Outcome(person=identity.user, created=created, claim_values=values)


def _remember(identity: Identity, values: list[str], grant: Grant) -> None:
    identity.claim_values = kept_values(values, grant)
    identity.last_sign_in = timezone.now()
    if identity.pk is None:
        identity.save()
    else:
        identity.save(update_fields=["claim_values", "last_sign_in"])


def _new_person(verified: Verified) -> Any:
    """A person who signs in only through the provider (no usable password)."""
    person = get_user_model()(username=_username(verified))
    person.set_unusable_password()
    person.full_clean()
    person.save()
    return person


def _username(verified: Verified) -> str:
    """The provider's preferred name (else email, else subject) in Django's
    username characters; a name taken (in any case), reserved for the break-glass
    admin or shaped like a key's gets a suffix made from the issuer and subject."""
    claims = verified.claims
    wanted = claims.get("preferred_username") or claims.get("email") or verified.subject
    base = USERNAME_CHARS.sub("-", str(wanted))[:120].strip("-.") or "person"
    users = get_user_model().objects
    reserved = base.casefold() == break_glass_name().casefold()
    if not reserved and not users.filter(username__iexact=base).exists():
        return base
    digest = hashlib.sha256(
        f"{verified.issuer}\n{verified.subject}".encode()
    ).hexdigest()
    return f"{base}-{digest[:10]}"


def _keep_email(person: Any, claims: dict[str, Any]) -> None:
    """The provider's email, only when it says it verified it (notifications go
    there); never used to find the person."""
    email = claims.get("email")
    if claims.get("email_verified") is not True or not isinstance(email, str):
        return
    try:
        validate_email(email)
    except ValidationError:
        return
    if person.email != email:
        person.email = email
        person.save(update_fields=["email"])


def _record_sign_in(
    identity: Identity, grant: Grant, request_id: uuid.UUID | None, *, created: bool
) -> None:
    person = identity.user
    record_event(
        EventType.SIGN_IN,
        actor=person,
        request_id=request_id,
        summary=f"person {person.get_username()!r} signed in (sso)"
        + (", first sign-in" if created else ""),
        input={
            "method": "sso",
            "issuer": identity.issuer,
            "subject": identity.subject,
            "matched": list(grant.matched),
        },
        output={
            "user_id": person.pk,
            "created": created,
            "groups": grant.group_names,
            "catalogs": "*" if grant.catalogs is None else list(grant.catalogs),
        },
    )


def _refuse(
    reason: str,
    verified: Verified,
    values: list[str],
    person: Any,
    request_id: uuid.UUID | None,
) -> None:
    record_refusal(
        reason,
        method="sso",
        request_id=request_id,
        person=person,
        details={
            "issuer": verified.issuer,
            "subject": verified.subject,
            "claim_values": values[:SHOWN_VALUES],
        },
    )


def record_refusal(
    reason: str,
    *,
    method: str,
    request_id: uuid.UUID | None,
    person: Any = None,
    details: dict[str, Any] | None = None,
) -> None:
    """A refused sign-in: what was decided and why ("field: rule"), the person
    when they are known; never a code, a token or an unchecked claim."""
    who = person.get_username() if person is not None else "someone"
    record_event(
        EventType.SIGN_IN_REFUSED,
        actor=None,
        request_id=request_id,
        summary=f"sign-in of {who} refused ({method}): {reason}"[:300],
        input={"method": method, **(details or {})},
        output={
            "refused": reason,
            "field": reason.split(":", 1)[0],
            "user_id": getattr(person, "pk", None),
        },
    )


def record_password_sign_in(
    person: Any, *, break_glass: bool, request_id: uuid.UUID | None
) -> None:
    """A password sign-in (the console's form or the admin's)."""
    note = ", break-glass" if break_glass else ""
    record_event(
        EventType.SIGN_IN,
        actor=person,
        request_id=request_id,
        summary=f"person {person.get_username()!r} signed in (password{note})",
        input={"method": "password", "break_glass": break_glass},
        output={"user_id": person.pk},
    )


def record_sign_out(person: Any, *, method: str, request_id: uuid.UUID | None) -> None:
    """A person signed out (any sign-out page)."""
    if person is None or str(person.get_username()).startswith(SERVICE_USER_PREFIX):
        return
    record_event(
        EventType.SIGN_OUT,
        actor=person,
        request_id=request_id,
        summary=f"person {person.get_username()!r} signed out ({method})",
        input={"method": method},
        output={"user_id": person.pk},
    )
