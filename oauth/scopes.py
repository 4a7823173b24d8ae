"""The scopes a client may ask for, and what they mean.

``mcp`` and ``api`` say where a token may be used (/mcp, and the REST API as the
same agent). ``catalog:<slug>``, ``role:<name>`` and ``unsafe`` ask for part of
the person's access: the consent page starts from them, and a person never
grants more than they hold (a request for a catalog, role or unsafe tools the
person does not hold is refused, never quietly narrowed). Anything else is not
a scope here (``invalid_scope``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from oauth.choices import (
    CATALOG_PREFIX,
    ENDPOINT_SCOPES,
    ROLE_PREFIX,
    SCOPE_UNSAFE,
)

SCOPE_CHARS = 2000
CATALOG = re.compile(r"^catalog:[-a-zA-Z0-9_]{1,64}$")
ROLE = re.compile(r"^role:[\w.@+-]{1,100}$")
RULE = (
    "scope: space-separated mcp, api, catalog:<slug>, role:<name> and unsafe "
    "(mcp or api at least)"
)


@dataclass(frozen=True)
class Requested:
    """A scope string read: where the token may be used, and the part of the
    person's access asked for (None: the client named no catalogs or roles)."""

    endpoints: tuple[str, ...]
    catalogs: tuple[str, ...] | None
    roles: tuple[str, ...] | None
    unsafe: bool

    @property
    def endpoint_scope(self) -> str:
        return " ".join(self.endpoints)


def scope_problem(scope: str | None) -> str:
    """'' when ``scope`` is made of scopes Quiver knows, else the rule."""
    if scope is None or scope == "":
        return ""
    if len(scope) > SCOPE_CHARS:
        return f"scope: at most {SCOPE_CHARS} characters"
    for item in scope.split():
        if not (
            item in ENDPOINT_SCOPES
            or item == SCOPE_UNSAFE
            or CATALOG.match(item)
            or ROLE.match(item)
        ):
            return f"scope: {item[:60]!r} is not a scope of Quiver ({RULE})"
    if not set(scope.split()) & set(ENDPOINT_SCOPES):
        return RULE
    return ""


def read_scope(scope: str | None) -> Requested:
    """What a (checked) scope string asks for; none given asks for both
    endpoints and leaves the policy to the consent page."""
    items = (scope or "").split() or list(ENDPOINT_SCOPES)
    catalogs = [i.removeprefix(CATALOG_PREFIX) for i in items if CATALOG.match(i)]
    roles = [i.removeprefix(ROLE_PREFIX) for i in items if ROLE.match(i)]
    return Requested(
        endpoints=tuple(s for s in ENDPOINT_SCOPES if s in items),
        catalogs=tuple(dict.fromkeys(catalogs)) or None,
        roles=tuple(dict.fromkeys(roles)) or None,
        unsafe=SCOPE_UNSAFE in items,
    )


def token_scopes(claims: dict[str, object]) -> frozenset[str]:
    """The scopes a token's claims grant: ``scope`` (RFC 9068, a string) or
    ``scp`` (Okta, Entra: a string or a list)."""
    granted: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            granted.update(value.split())
        elif isinstance(value, list):
            granted.update(str(item) for item in value if isinstance(item, str))
    return frozenset(granted)
