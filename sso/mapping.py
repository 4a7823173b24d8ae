"""What a person's groups claim maps to: the union of every mapping it names.

A claim is a list of strings or one string (Google's ``hd``); a dotted name
reaches into an object (Keycloak's ``realm_access.roles``) when no claim has the
whole name. Catalogs that no longer exist are left out, so a mapping naming only
deleted catalogs gives none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group

from sso.models import CLAIM_VALUE_MAX, CLAIM_VALUES_KEPT, ClaimMapping
from sso.people import existing_catalogs

# Values of one claim looked up at most (a provider may list thousands of groups).
CLAIM_VALUES_READ = 5000


@dataclass(frozen=True)
class Grant:
    """What the mappings a claim names give: the values that matched, the groups
    and the catalogs (None: every catalog)."""

    matched: tuple[str, ...] = ()
    groups: tuple[Group, ...] = ()
    catalogs: tuple[str, ...] | None = ()

    @property
    def empty(self) -> bool:
        """No mapping matched, or the ones that did give no catalog: no access."""
        return not self.matched or self.catalogs == ()

    def access(self) -> tuple[list[Group], list[str] | None]:
        """The groups and catalogs to give (None: every catalog); none of either
        when the grant is empty."""
        if self.empty:
            return [], []
        return list(self.groups), None if self.catalogs is None else list(self.catalogs)

    @property
    def group_names(self) -> list[str]:
        return sorted(group.name for group in self.groups)


def claim_values(claims: Mapping[str, Any], name: str) -> list[str]:
    """The claim's values, as strings, without repeats, in the order sent."""
    value = claims[name] if name in claims else _dig(claims, name)
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        return []
    found = [v for v in items[:CLAIM_VALUES_READ] if isinstance(v, str)]
    return list(dict.fromkeys(v for v in found if v and len(v) <= CLAIM_VALUE_MAX))


def _dig(claims: Mapping[str, Any], name: str) -> Any:
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def grant_for(values: Iterable[str]) -> Grant:
    """The union of the mappings of these claim values."""
    rows = list(
        ClaimMapping.objects.filter(value__in=list(values)).prefetch_related("groups")
    )
    if not rows:
        return Grant()
    groups = {group.pk: group for row in rows for group in row.groups.all()}
    every = any(row.catalogs is None for row in rows)
    catalogs = (
        None
        if every
        else tuple(
            existing_catalogs(slug for row in rows for slug in row.catalogs or [])
        )
    )
    return Grant(
        matched=tuple(sorted(row.value for row in rows)),
        groups=tuple(groups[pk] for pk in sorted(groups)),
        catalogs=catalogs,
    )


def kept_values(values: list[str], grant: Grant) -> list[str]:
    """What an identity keeps of the claim: the matched values first, so a later
    change of mapping finds them however many groups the person has."""
    rest = [v for v in values if v not in grant.matched]
    return [*grant.matched, *rest][:CLAIM_VALUES_KEPT]
