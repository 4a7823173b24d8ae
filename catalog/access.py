"""Who may see what: one answer per caller, used by every API view and console page.

``access_for(user)`` turns a person or an API client into an ``Access``: its scope,
the catalogs it may see, the roles and the unsafe permission selection policy uses
for it. The queryset methods ``visible_to`` (catalogs, tools, jobs, audit events)
take that answer, so a tool list, an export, a selection's exclusions and a
validation can never show a caller more than it could ever be offered.

Rules (fail closed):

* API clients: the scope, roles, catalogs and unsafe permission set on the client.
* People: superusers are admins; otherwise the highest of their groups ``admin``,
  ``curator``, ``compliance`` (else ``agent``); their roles are their group names;
  unsafe tools need the ``catalog.use_unsafe_tools`` permission on one of their
  groups (the ``admin`` group has it); ``UserCatalogAccess`` limits their catalogs:
  no row means every catalog (the explicit "all catalogs" of the People page), a
  row with an empty list means none (fail closed).
* Curators, compliance and admins see every tool of their catalogs (they keep or
  audit the catalog); agents see only the tools their roles and unsafe permission
  would let a selection offer them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from django.contrib.auth.models import Permission
from django.db.models import Exists, OuterRef
from django.http import Http404

from catalog.choices import ApiScope
from catalog.models import Catalog

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser

# Who did something: a person or an API client's service user; None for the system.
Actor: TypeAlias = "AbstractBaseUser | AnonymousUser | None"

WRITE_SCOPES = frozenset({ApiScope.CURATOR.value, ApiScope.ADMIN.value})
AUDIT_SCOPES = frozenset({ApiScope.COMPLIANCE.value, ApiScope.ADMIN.value})
WHOLE_CATALOG_SCOPES = WRITE_SCOPES | AUDIT_SCOPES
GROUP_SCOPES = (ApiScope.ADMIN, ApiScope.CURATOR, ApiScope.COMPLIANCE)
UNSAFE_APP, UNSAFE_CODENAME = "catalog", "use_unsafe_tools"


@dataclass(frozen=True)
class Access:
    """What one caller may see and do; ``None`` catalogs or roles mean "all"."""

    scope: str | None
    catalogs: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = ()
    allow_unsafe: bool = False

    @property
    def signed_in(self) -> bool:
        return self.scope is not None

    @property
    def can_write(self) -> bool:
        return self.scope in WRITE_SCOPES

    @property
    def can_audit(self) -> bool:
        return self.scope in AUDIT_SCOPES

    @property
    def is_admin(self) -> bool:
        return self.scope == ApiScope.ADMIN

    @property
    def sees_whole_catalog(self) -> bool:
        """Curators, compliance and admins see every tool of their catalogs."""
        return self.scope in WHOLE_CATALOG_SCOPES

    @property
    def all_catalogs(self) -> bool:
        return self.catalogs is None

    def may_see_catalog(self, slug: str) -> bool:
        return self.signed_in and (self.catalogs is None or slug in self.catalogs)


NOBODY = Access(scope=None, catalogs=(), roles=(), allow_unsafe=False)


def access_for(user: Any) -> Access:
    """The caller's access, computed once per request (kept on the user object)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return NOBODY
    cached = getattr(user, "_quiver_access", None)
    if isinstance(cached, Access):
        return cached
    client = getattr(user, "api_client", None)
    access = _client_access(client) if client is not None else _person_access(user)
    user._quiver_access = access
    return access


def _client_access(client: Any) -> Access:
    scope = str(client.scope)
    return Access(
        scope=scope,
        catalogs=tuple(client.catalogs) or None,
        roles=None if scope == ApiScope.ADMIN else tuple(client.roles),
        allow_unsafe=bool(client.allow_unsafe),
    )


def _person_access(user: Any) -> Access:
    """One query for the groups and their unsafe permission, one for catalogs."""
    unsafe_grant = Permission.objects.filter(
        group=OuterRef("pk"),
        content_type__app_label=UNSAFE_APP,
        codename=UNSAFE_CODENAME,
    )
    rows = list(
        user.groups.annotate(unsafe=Exists(unsafe_grant)).values_list("name", "unsafe")
    )
    groups = tuple(sorted(name for name, _ in rows))
    scope = ApiScope.ADMIN.value if user.is_superuser else _group_scope(groups)
    return Access(
        scope=scope,
        catalogs=_person_catalogs(user),
        roles=None if scope == ApiScope.ADMIN else groups,
        allow_unsafe=bool(user.is_superuser or any(flag for _, flag in rows)),
    )


def _group_scope(groups: tuple[str, ...]) -> str:
    for scope in GROUP_SCOPES:
        if scope.value in groups:
            return scope.value
    return ApiScope.AGENT.value


def _person_catalogs(user: Any) -> tuple[str, ...] | None:
    from catalog.models import UserCatalogAccess

    row = UserCatalogAccess.objects.filter(user=user).only("catalogs").first()
    if row is None:
        return None  # no limit set: every catalog (People page: "all catalogs")
    # A limit is a list of slugs; an empty list (or anything else) is no catalog.
    catalogs = row.catalogs if isinstance(row.catalogs, list) else []
    return tuple(str(slug) for slug in catalogs)


def get_catalog_for_user(user: Any, slug: str) -> Catalog:
    """The catalog if the caller may see it, else 404 (never a hint that it exists).

    A read never writes: the ``default`` catalog is made by a migration."""
    catalog = Catalog.objects.visible_to(access_for(user)).filter(slug=slug).first()
    if catalog is None:
        raise Http404(f"catalog: no catalog {slug!r}")
    return catalog


def actor_name(actor: Any) -> str:
    """The one spelling of who did something, for change and audit records."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        return "system"
    return str(actor.get_username())


def stored_user(actor: Actor) -> Any:
    """The actor as a saved user for a foreign key, or None (system, anonymous)."""
    if actor is None or not getattr(actor, "pk", None):
        return None
    return actor
