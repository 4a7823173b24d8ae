"""Who may see what: one answer per caller, used by every API view and console page.

``access_for(user)`` turns a person or an API client into an ``Access`` (its scope,
catalogs, roles and unsafe permission), and the queryset methods ``visible_to`` take
that answer, so no list, export, selection or validation can show a caller more than
it could ever be offered. Keys (``key_within``) and approvals are decided here too,
people in ``identity.access_people``: one module decides access.
The rules: docs/explanation/security.md, People and access, API keys and Approvals.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.models import Exists, OuterRef

from audit.actors import Actor, Caller
from config.lookups import any_of
from identity.choices import ApiScope, ClientKind
from identity.key_chain import MAX_CHAIN, key_chain
from identity.models import ApiClient, UserCatalogAccess

if TYPE_CHECKING:
    from django.contrib.auth.models import User
    from django.db.models import QuerySet

WRITE_SCOPES = frozenset({ApiScope.CURATOR.value, ApiScope.ADMIN.value})
AUDIT_SCOPES = frozenset({ApiScope.COMPLIANCE.value, ApiScope.ADMIN.value})
WHOLE_CATALOG_SCOPES = WRITE_SCOPES | AUDIT_SCOPES
GROUP_SCOPES = (ApiScope.ADMIN, ApiScope.CURATOR, ApiScope.COMPLIANCE)
UNSAFE_APP, UNSAFE_CODENAME = "catalog", "use_unsafe_tools"
APPROVE_APP, APPROVE_CODENAME = "calls", "decide_approval"
# The scopes a key may have when its maker has the scope on the left.
SCOPE_COVERS = {
    ApiScope.ADMIN.value: frozenset(ApiScope.values),
    ApiScope.CURATOR.value: frozenset({ApiScope.CURATOR.value, ApiScope.AGENT.value}),
    ApiScope.COMPLIANCE.value: frozenset(
        {ApiScope.COMPLIANCE.value, ApiScope.AGENT.value}
    ),
    ApiScope.AGENT.value: frozenset({ApiScope.AGENT.value}),
}
ALL_CATALOGS = "*"


@dataclass(frozen=True)
class Access:
    """What one caller may see and do; ``None`` catalogs or roles mean "all"."""

    scope: str | None
    catalogs: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = ()
    allow_unsafe: bool = False
    # API keys only: the key's own limit a minute (None: the site default; 0: none).
    # People are not bounded by a key's limit or expiry (``key_id`` None).
    rate_limit: int | None = None
    expires: datetime | None = None
    key_id: int | None = None
    # People only: holds ``calls.decide_approval`` (the approver and admin groups).
    decides_approvals: bool = False

    @property
    def is_key(self) -> bool:
        return self.key_id is not None

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
    def manages_sources(self) -> bool:
        """Sources (MCP servers a catalog syncs, with their secret headers) are
        admins' only: a source decides which tools exist and where calls go."""
        return self.scope == ApiScope.ADMIN

    @property
    def manages_webhooks(self) -> bool:
        """Webhooks (where a catalog's approvals are announced, with their
        arguments, and the secret that signs them) are admins' only, as sources."""
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


def access_for(user: Actor) -> Access:
    """The caller's access, computed once per request (kept on the user object)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return NOBODY
    cached = getattr(user, "_quiver_access", None)
    if isinstance(cached, Access):
        return cached
    client = getattr(user, "api_client", None)
    # Signed in and no key's: a person (mypy cannot see through the getattr above).
    access = _client_access(client) if client is not None else _person_access(user)  # type: ignore[arg-type]
    user._quiver_access = access  # type: ignore[union-attr]
    return access


def _client_access(client: Any) -> Access:
    """Every catalog only when ``all_catalogs`` is set; an empty list is none.
    A client acting for a person holds no more than the person holds now."""
    scope = str(client.scope)
    access = Access(
        scope=scope,
        catalogs=None if client.all_catalogs else tuple(client.catalogs),
        roles=None if scope == ApiScope.ADMIN else tuple(client.roles),
        allow_unsafe=bool(client.allow_unsafe),
        rate_limit=client.rate_limit_per_minute,
        expires=client.expires,
        key_id=client.pk,
    )
    if client.person_id is None and not client.person_name:
        return access
    person = client.person if client.person_id is not None else None
    if person is None or not person.is_active:
        return NOBODY  # it acts for nobody who may act: fail closed
    return within_person(access, _person_access(person))


def within_person(key: Access, person: Access) -> Access:
    """``key`` narrowed to what ``person`` holds: the smaller scope (agent when
    neither covers the other), the catalogs and roles both hold, unsafe tools
    only when both may; the key's own limit, expiry and id. Never decides
    approvals (a key never does)."""
    if key.scope in SCOPE_COVERS[str(person.scope)]:
        scope = key.scope
    elif person.scope in SCOPE_COVERS[str(key.scope)]:
        scope = person.scope
    else:
        scope = ApiScope.AGENT.value
    roles = _both(key.roles, person.roles)
    return replace(
        key,
        scope=scope,
        catalogs=_both(key.catalogs, person.catalogs),
        roles=None if scope == ApiScope.ADMIN else (roles or ()),
        allow_unsafe=key.allow_unsafe and person.allow_unsafe,
    )


def _both(
    first: tuple[str, ...] | None, second: tuple[str, ...] | None
) -> tuple[str, ...] | None:
    """What two holdings share; None is "every one"."""
    if first is None:
        return second
    if second is None:
        return first
    return tuple(item for item in first if item in second)


def acting_person(user: Actor) -> Any:
    """The person a caller acts for, or None: a person acts for themself; an
    API key bound to a person, or an OAuth connection's token, for that person
    (None when that person is gone or deactivated: the client is stopped
    then); a key bound to nobody, the system and anonymous callers for nobody.

    The one answer for "whose agent is this", for the audit and for anything
    that must act upstream as a person rather than as Quiver."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    client = getattr(user, "api_client", None)
    if client is None:
        return user if user.is_active else None
    if client.person_id is None:
        return None
    person = client.person
    return person if person is not None and person.is_active else None


@dataclass(frozen=True)
class KeyGrant:
    """What a key holds, from a stored client or from the fields asked for."""

    scope: str
    catalogs: tuple[str, ...] | None  # None: every catalog
    roles: tuple[str, ...]
    allow_unsafe: bool
    rate_limit: int | None  # None: the site default; 0: no limit
    expires: datetime | None = None  # None: never

    @classmethod
    def of(cls, key: ApiClient | KeyGrant) -> KeyGrant:
        if isinstance(key, KeyGrant):
            return key
        return cls(
            scope=str(key.scope),
            catalogs=None if key.all_catalogs else tuple(key.catalogs),
            roles=tuple(key.roles),
            allow_unsafe=bool(key.allow_unsafe),
            rate_limit=key.rate_limit_per_minute,
            expires=key.expires,
        )


def key_within(access: Access, key: ApiClient | KeyGrant) -> str:
    """'' when ``access`` holds everything ``key`` holds, else "field: why".

    The one rule for creating, listing, editing, rotating and revoking keys. A
    catalog the caller may not see and one that does not exist get the same
    answer, so a limited caller learns nothing about other catalogs."""
    grant = KeyGrant.of(key)
    if not access.signed_in or grant.scope not in SCOPE_COVERS[str(access.scope)]:
        return f"scope: a {access.scope} caller cannot hold a {grant.scope} key"
    if grant.catalogs is None and access.catalogs is not None:
        return "catalogs: '*' (every catalog) needs a caller with every catalog"
    outside = [c for c in grant.catalogs or () if not access.may_see_catalog(c)]
    if outside:
        return f"catalogs: no catalog {outside[0]!r} among the caller's catalogs"
    if access.roles is not None and grant.scope != ApiScope.ADMIN:
        extra = sorted(set(grant.roles) - set(access.roles))
        if extra:
            return f"roles: {extra[0]!r} is not one of the caller's roles"
    if grant.allow_unsafe and not access.allow_unsafe:
        return "allow_unsafe: the caller may not be offered unsafe tools"
    if access.expires is not None and (
        grant.expires is None or grant.expires > access.expires
    ):
        return "expires: must be set and no later than the caller's own expiry"
    return _rate_problem(access, grant.rate_limit)


def _rate_problem(access: Access, wanted: int | None) -> str:
    """A key's limit may not be looser than its maker's (0 is no limit at all)."""
    if not access.is_key:
        return ""
    default = int(settings.QUIVER_RATE_LIMIT_PER_MINUTE)
    own = access.rate_limit
    bound = default if own is None else own
    if bound == 0 or (wanted is None and own is None):
        return ""
    effective = default if wanted is None else wanted
    if effective == 0 or effective > bound or (wanted is None and own is not None):
        return (
            f"rate_limit_per_minute: must be set and at most {bound}, "
            "the caller's own limit"
        )
    return ""


def keys_within(access: Access, keys: QuerySet[ApiClient]) -> QuerySet[ApiClient]:
    """The keys ``access`` may see and manage (``key_within`` for each one).

    A key never sees the keys above it (the key that made it, and so on): even an
    equal one would hand it a secret that outlives it."""
    # An OAuth connection is no key: its person manages it (oauth/), not here.
    keys = keys.filter(kind=ClientKind.KEY)
    if access.key_id is not None:
        keys = keys.exclude(pk__in=_ancestors(access.key_id))
    if (
        access.is_admin
        and access.catalogs is None
        and access.allow_unsafe
        and access.expires is None
        and not _rate_problem(access, 0)
    ):
        return keys
    rows = keys.select_related(None).only(*_GRANT_FIELDS)
    ids = [key.pk for key in rows if not key_within(access, key)]
    return keys.filter(pk__in=ids)


def _ancestors(key_id: int) -> list[int]:
    """The keys above ``key_id``, nearest first."""
    return [row[0] for row in key_chain(key_id)[1:]]


_GRANT_FIELDS = (
    "pk",
    "scope",
    "catalogs",
    "all_catalogs",
    "roles",
    "allow_unsafe",
    "rate_limit_per_minute",
    "expires",
)


def _person_access(user: User) -> Access:
    """One query for the groups and their unsafe permission, one for catalogs."""
    unsafe_grant = Permission.objects.filter(
        group=OuterRef("pk"),
        content_type__app_label=UNSAFE_APP,
        codename=UNSAFE_CODENAME,
    )
    approve_grant = Permission.objects.filter(
        group=OuterRef("pk"),
        content_type__app_label=APPROVE_APP,
        codename=APPROVE_CODENAME,
    )
    rows = list(
        user.groups.annotate(
            unsafe=Exists(unsafe_grant), approve=Exists(approve_grant)
        ).values_list("name", "unsafe", "approve")
    )
    groups = tuple(sorted(name for name, _, _ in rows))
    scope = ApiScope.ADMIN.value if user.is_superuser else _group_scope(groups)
    return Access(
        scope=scope,
        catalogs=_person_catalogs(user),
        roles=None if scope == ApiScope.ADMIN else groups,
        allow_unsafe=bool(user.is_superuser or any(row[1] for row in rows)),
        decides_approvals=bool(user.is_superuser or any(row[2] for row in rows)),
    )


def _group_scope(groups: tuple[str, ...]) -> str:
    for scope in GROUP_SCOPES:
        if scope.value in groups:
            return scope.value
    return ApiScope.AGENT.value


def _person_catalogs(user: User) -> tuple[str, ...] | None:
    row = UserCatalogAccess.objects.filter(user=user).only("catalogs").first()
    if row is None:
        return None  # no limit set: every catalog (People page: "all catalogs")
    # A limit is a list of slugs; an empty list (or anything else) is no catalog.
    catalogs = row.catalogs if isinstance(row.catalogs, list) else []
    return tuple(str(slug) for slug in catalogs)


# Approvals of tool calls (calls.Approval). Only people decide, with the
# ``calls.decide_approval`` permission (the approver and admin groups), within
# their catalogs, and never on a request of their own or of a key they made (or
# of a key made by such a key). Compliance and admin people read them too. An
# API key never lists approvals: it may read only its own request's, by id.
APPROVALS_PERMISSION_RULE = (
    "permission: approving or denying tool calls needs the approver or admin group"
)


def reads_approvals(access: Access) -> bool:
    """May list approvals: people who decide them, and compliance or admins."""
    return not access.is_key and (access.decides_approvals or access.can_audit)


def approvals_visible_to(user: Caller, approvals: QuerySet[Any]) -> QuerySet[Any]:
    """The approvals ``user`` may see: a key only its own requests'; a person who
    reads approvals those of their catalogs; anyone else none."""
    access = access_for(user)
    if access.is_key:
        return approvals.filter(requested_by_id=user.pk)
    if not reads_approvals(access):
        return approvals.none()
    if access.catalogs is None:
        return approvals
    return approvals.filter(any_of("catalog__slug", access.catalogs))


def approval_decision_problem(user: Caller, approval: Any) -> str:
    """'' when ``user`` may approve or deny ``approval``, else "field: why"."""
    access = access_for(user)
    if not access.signed_in or access.is_key:
        return "person: only a person approves or denies a call, never an API key"
    if not access.decides_approvals:
        return APPROVALS_PERMISSION_RULE
    if not access.may_see_catalog(approval.catalog.slug):
        return f"catalog: no catalog {approval.catalog.slug!r} among yours"
    if approval.requested_by_id is None:
        return REQUESTER_GONE_RULE
    if is_own_request(user, approval):
        return "requested_by: a person never decides a request of their own"
    return ""


# Who asked is known by id only: a name can be given to someone else (a rename,
# a new person), so a request whose requester row is gone is nobody's to decide.
REQUESTER_GONE_RULE = (
    "requested_by: the requester was deleted, so whose request this was cannot be "
    "told; it can never be used, and nobody decides it"
)


def is_own_request(person: Any, approval: Any) -> bool:
    """The request came from ``person``, or from a key whose chain (the key, the
    key that made it, and so on) was made by ``person`` or acts for them (a bound
    key, an OAuth connection): compared by id, never by name (a renamed person
    keeps their requests; a new person given an old name does not inherit them).
    A request whose requester is gone counts as anyone's."""
    if approval.requested_by_id is None:
        return True
    if approval.requested_by_id == person.pk:
        return True
    key = (
        ApiClient.objects.filter(user_id=approval.requested_by_id)
        .values_list("pk", flat=True)
        .first()
    )
    if key is None:
        return False
    # A chain longer than key_chain reads fails closed: treat it as their own.
    chain = key_chain(key)
    return len(chain) >= MAX_CHAIN or any(person.pk in row[9:11] for row in chain)


OWN_KEYS_SQL = """
WITH RECURSIVE mine (id, user_id, depth) AS (
    SELECT id, user_id, 1 FROM {keys} WHERE owner_id = %s OR person_id = %s
    UNION ALL
    SELECT k.id, k.user_id, mine.depth + 1
    FROM {keys} k JOIN mine ON k.parent_id = mine.id
    WHERE mine.depth < %s
)
SELECT DISTINCT user_id FROM mine
"""


def own_requesters(person: Any) -> set[int]:
    """The users whose requests count as ``person``'s own, in one query: the
    person and the service users of the keys they made or that act for them (by
    id) and of the keys below those (``MAX_CHAIN`` deep). For showing; a decision checks
    ``is_own_request``, which fails closed on a longer chain."""
    sql = OWN_KEYS_SQL.format(keys=connection.ops.quote_name(ApiClient._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql, [person.pk, person.pk, MAX_CHAIN])
        return {int(row[0]) for row in cursor.fetchall()} | {int(person.pk)}


LABEL_MANAGERS = (
    "permission: labels and evaluations are managed by the catalog's curators "
    "and admins"
)
LABEL_READERS = (
    "permission: labels, evaluations and confusable tools are read by the "
    "catalog's curators, compliance and admins (they name tools an agent may not "
    "know of)"
)


def may_read_labels(access: Access, slug: str) -> bool:
    """Curators, compliance and admins of the catalog read its labels, its
    evaluations and its confusable tools: like selection settings, they name
    tools an agent's roles may hide from it."""
    return access.sees_whole_catalog and access.may_see_catalog(slug)


def may_manage_labels(access: Access, slug: str) -> bool:
    """Curators and admins of the catalog upload, review and delete its labels
    and run its evaluations."""
    return access.can_write and access.may_see_catalog(slug)
