"""Read queries of the catalog app, as queryset methods."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Case, Count, Exists, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.db.models.query import ModelIterable

from audit.actors import Actor
from catalog.naming import look
from config.lookups import any_of
from identity.access import GROUP_SCOPES, Access, access_for
from identity.models import ApiClient

# A tool held for review (catalog.choices.ToolStatus.HELD): no agent sees it.
HELD = "held"
# A caller's catalogs up to this many are sent with a cross-catalog lookup by
# name (``ToolQuerySet.catalogs_calling``); more are matched against its rows.
SENT_CATALOGS = 32


def _access(who: Actor | Access) -> Access:
    """An Access for a user or an Access (views pass either)."""
    return who if isinstance(who, Access) else access_for(who)


def _visible_tools_q(access: Access, prefix: str = "") -> Q:
    """The condition on a tool's own fields that the caller may see it: not
    held for review, its unsafe flag and roles (agents); everything for
    whole-catalog scopes."""
    if access.sees_whole_catalog:
        return Q()
    return seen_q(access.roles, access.allow_unsafe, prefix)


def seen_q(roles: tuple[str, ...] | None, unsafe: bool, prefix: str = "") -> Q:
    """``_visible_tools_q`` of a reader's roles (None: any) and unsafe permission,
    on a tool's columns or (``prefix`` ``before__``) on a change's stored state:
    never a tool held for review."""
    condition = ~Q(**{f"{prefix}status": HELD})
    if not unsafe:
        condition &= Q(**{f"{prefix}safe": True})
    if roles is not None:
        open_to_all = Q(**{f"{prefix}allowed_roles": []})
        if roles:
            open_to_all |= Q(**{f"{prefix}allowed_roles__has_any_keys": list(roles)})
        condition &= open_to_all
    return condition


def tool_visible(access: Access, tool: Any) -> bool:
    """``_visible_tools_q`` for a tool already read (the call path reads its
    tools with SQL made once, calls.reads): the same rule on the row's values,
    held to the queryset's answer by tests/catalog/test_tool_visible.py."""
    if access.sees_whole_catalog:
        return True
    if tool.status == HELD:
        return False
    if not access.allow_unsafe and tool.safe is not True:
        return False
    if access.roles is None:
        return True
    return tool.allowed_roles == [] or bool(
        _top_level_texts(tool.allowed_roles) & set(access.roles)
    )


def _top_level_texts(value: Any) -> set[str]:
    """What jsonb's ``?|`` (``has_any_keys``) matches in a stored value: an
    object's keys, an array's string elements, a string itself."""
    if isinstance(value, dict):
        return set(value)
    if isinstance(value, list):
        return {item for item in value if isinstance(item, str)}
    return {value} if isinstance(value, str) else set()


# The tool list's sort keys (API ``?ordering=``, console ``?sort=``), each with the
# columns it sorts by; ``-key`` reverses. Ties fall back to catalog, name and id.
TOOL_ORDERINGS: dict[str, tuple[str, ...]] = {
    "name": ("name",),
    "catalog": ("catalog__slug",),
    "category": ("category",),
    "status": ("status",),
    "safety": ("-safe", "risk_rank"),
    "risk_level": ("risk_rank",),
    "cost": ("cost_per_call",),
    "embedding": ("embedding_status",),
    "updated_at": ("updated",),
    "created_at": ("created",),
    "version": ("version",),
    "id": ("id",),
}
_RISK_RANK = Case(
    When(risk_level="low", then=Value(0)),
    When(risk_level="medium", then=Value(1)),
    When(risk_level="high", then=Value(2)),
    default=Value(3),
)


def _flip(column: str) -> str:
    return column[1:] if column.startswith("-") else f"-{column}"


class CatalogQuerySet(models.QuerySet):
    def visible_to(self, who: Actor | Access) -> CatalogQuerySet:
        """The catalogs a caller may see (see identity.access)."""
        access = _access(who)
        if not access.signed_in:
            return self.none()
        if access.catalogs is None:
            return self
        return self.filter(any_of("slug", access.catalogs))

    def slugs_among(self, slugs: Iterable[str]) -> set[str]:
        """The slugs among ``slugs`` that name a catalog (identity.catalogs asks)."""
        return set(self.filter(slug__in=list(slugs)).values_list("slug", flat=True))

    def with_counts(self, who: Actor | Access) -> CatalogQuerySet:
        """Each catalog read with its tool counts (in all, by status, by embedding
        status) of the tools the caller may see: even a count never tells of a
        hidden tool. Counted for the rows read only (a page), in one grouped
        query, so a page costs the same whatever the caller sees; ordered by
        slug, so pages never repeat or skip catalogs."""
        counted = type("Counted", (_CountedCatalogs,), {"access": _access(who)})
        catalogs = self.order_by("slug")
        catalogs._iterable_class = counted
        return catalogs

    def embedding_backlog(self) -> list[dict[str, Any]]:
        """Each catalog's tools waiting for their vectors (``pending``) and whether
        its selections are ranked by words alone (``words_only``: it has tools and
        no model whose vectors it may use yet), by slug: what ``/healthz`` tells."""
        from catalog.models import Tool

        tools = Tool.objects.filter(catalog=OuterRef("pk"))
        # Per catalog, on the (catalog, embedding_status) index: no scan of tools.
        waiting = tools.filter(embedding_status="pending").values("catalog")
        count = waiting.annotate(n=Count("pk")).values("n")
        pending = Coalesce(Subquery(count), Value(0))
        rows = self.annotate(pending=pending, some=Exists(tools))
        return [
            {
                "catalog": row["slug"],
                "pending": row["pending"],
                "words_only": row["some"] and not row["active_embedding_model"],
            }
            for row in rows.order_by("slug").values(
                "slug", "pending", "some", "active_embedding_model"
            )
        ]


# The counts ``with_counts`` sets on each catalog: the attribute, and the
# condition on a tool (beside the caller's sight) it counts.
TOOL_COUNTS: dict[str, Q] = {
    "tool_count": Q(),
    **{f"status_{s}": Q(status=s) for s in ("active", "disabled", "deprecated", HELD)},
    **{f"embedding_{s}": Q(embedding_status=s) for s in ("pending", "ready", "failed")},
}


class _CountedCatalogs(ModelIterable):
    """Catalogs as read, each with ``TOOL_COUNTS`` of the tools ``access`` sees:
    one grouped query over the rows read (``CatalogQuerySet.with_counts``)."""

    access: Access

    def __iter__(self) -> Iterator[Any]:
        from catalog.models import Tool

        catalogs = list(super().__iter__())
        seen = _visible_tools_q(self.access)
        counts = {
            f"n_{name}": Count("pk", filter=only) for name, only in TOOL_COUNTS.items()
        }
        tools = Tool.objects.filter(
            seen, any_of("catalog__id", [c.pk for c in catalogs])
        )
        rows = tools.order_by().values("catalog_id").annotate(**counts)
        found: dict[int, dict[str, Any]] = {}
        if catalogs:
            found = {row["catalog_id"]: dict(row) for row in rows}
        for catalog in catalogs:
            row = found.get(catalog.pk, {})
            for name in TOOL_COUNTS:
                setattr(catalog, name, row.get(f"n_{name}", 0))
        return iter(catalogs)


class ToolQuerySet(models.QuerySet):
    def visible_to(self, who: Actor | Access) -> ToolQuerySet:
        """The tools a caller could ever be offered or may keep (identity.access).

        Hiding is not access control: every list, detail, export, exclusion and
        validation reads through this, so agents never learn of a tool their
        roles or unsafe permission keep from them."""
        access = _access(who)
        if not access.signed_in:
            return self.none()
        tools = self
        if access.catalogs is not None:
            tools = tools.filter(any_of("catalog__slug", access.catalogs))
        return tools.filter(_visible_tools_q(access))

    def called(self, names: list[str]) -> ToolQuerySet:
        """The tools ``names`` call: each name's look held by the tool (one
        indexed lookup, catalog.names), which is called by it (its name or
        provider name). Looks several tools held before the one-name rule are
        held by none, so they call nothing here (``catalog.names.ambiguous``)."""
        held = self.filter(looks__look__in={look(name) for name in names})
        return held.filter(Q(name__in=names) | Q(provider_name__in=names))

    def catalogs_calling(self, who: Actor | Access, name: str) -> list[str]:
        """The slugs of the catalogs where the caller may see a tool ``name``
        calls (never one held for review: nobody calls it), from the name's look
        (``called``): one indexed query whose cost does not grow with the
        catalogs the caller sees. A short list of them is
        sent with it; a long one is matched here against the rows, which are at
        most one a catalog holding the name (its look is unique there), so the
        query never carries hundreds of slugs for the database to plan."""
        access = _access(who)
        if not access.signed_in:
            return []
        tools = self.filter(_visible_tools_q(access)).exclude(status=HELD)
        tools = tools.called([name]).order_by()
        limit = access.catalogs
        if limit is not None and len(limit) <= SENT_CATALOGS:
            tools = tools.filter(any_of("catalog__slug", limit))
        slugs = tools.values_list("catalog__slug", flat=True)
        mine = None if limit is None else frozenset(limit)
        return sorted(slug for slug in slugs if mine is None or slug in mine)

    def managed_by(self, who: Actor | Access) -> ToolQuerySet:
        """The tools a caller may change: curators and admins, within their
        catalogs; nobody else (agents and compliance never)."""
        access = _access(who)
        if not access.can_write:
            return self.none()
        return self.visible_to(access)

    def sorted_by(self, key: str) -> ToolQuerySet:
        """Sorted by a ``TOOL_ORDERINGS`` key (``-key`` descending); an unknown key
        is a ValueError naming the known ones (callers turn it into a 400)."""
        name = key[1:] if key.startswith("-") else key
        if name not in TOOL_ORDERINGS:
            known = ", ".join(sorted(TOOL_ORDERINGS))
            raise ValueError(f"ordering: must be one of {known} (or -key)")
        columns = list(TOOL_ORDERINGS[name])
        if key.startswith("-"):
            columns = [_flip(column) for column in columns]
        ranked = any(column.endswith("risk_rank") for column in columns)
        tools = self.annotate(risk_rank=_RISK_RANK) if ranked else self
        return tools.order_by(*columns, "catalog__slug", "name", "id")

    def search(self, text: str) -> ToolQuerySet:
        text = text.strip()
        if not text:
            return self
        return self.filter(
            Q(name__icontains=text)
            | Q(original_name__icontains=text)
            | Q(title__icontains=text)
            | Q(description__icontains=text)
            | Q(category__icontains=text)
        )

    def with_tag(self, tag: str) -> ToolQuerySet:
        return self.filter(tags__contains=[tag])

    def for_role(self, role: str) -> ToolQuerySet:
        """Tools a caller with this role may use: open to any role, or naming it."""
        return self.filter(Q(allowed_roles=[]) | Q(allowed_roles__contains=[role]))

    def filtered(
        self,
        *,
        catalog: str = "",
        category: str = "",
        status: str = "",
        embedding_status: str = "",
        tag: str = "",
        role: str = "",
        safe: bool | None = None,
        q: str = "",
    ) -> ToolQuerySet:
        """The list filters shared by the API and the console; empty = no filter."""
        tools = self.filter(catalog__slug=catalog) if catalog else self
        exact = {"category": category, "status": status}
        exact["embedding_status"] = embedding_status
        tools = tools.filter(**{k: v for k, v in exact.items() if v})
        if tag:
            tools = tools.with_tag(tag)
        if role:
            tools = tools.for_role(role)
        if safe is not None:
            tools = tools.filter(safe=safe)
        return tools.search(q)


def catalog_changes(catalog: Any, tool_name: str = "") -> Any:
    """A catalog's tool change records, newest first; deleted tools' too."""
    from catalog.models import ToolChange

    changes = ToolChange.objects.filter(catalog=catalog)
    if tool_name:
        changes = changes.filter(tool_name=tool_name)
    return changes.order_by("-id")


def known_roles(catalog_ids: list[int]) -> list[str]:
    """The roles these catalogs already know, sorted: those their tools name, the
    roles of keys that may see one of them, and people's role groups (every group
    but the scope groups). A tool form offers these, so a typo cannot make a tool
    reachable by nobody."""
    from catalog.models import Catalog, Tool

    roles = {
        role
        for (listed,) in Tool.objects.filter(catalog_id__in=catalog_ids)
        .exclude(allowed_roles=[])
        .values_list("allowed_roles")
        .distinct()
        for role in listed
    }
    slugs = list(
        Catalog.objects.filter(pk__in=catalog_ids).values_list("slug", flat=True)
    )
    reach = Q(all_catalogs=True)
    for slug in slugs:
        reach |= Q(catalogs__contains=[slug])
    for (listed,) in ApiClient.objects.filter(reach, revoked=False).values_list(
        "roles"
    ):
        roles.update(role for role in listed if isinstance(role, str))
    scopes = {scope.value for scope in GROUP_SCOPES}
    roles.update(Group.objects.exclude(name__in=scopes).values_list("name", flat=True))
    return sorted(role for role in roles if isinstance(role, str) and role)


class ToolReviewQuerySet(models.QuerySet):
    def visible_to(self, who: Actor | Access) -> ToolReviewQuerySet:
        """The reviews a caller may read: those of its catalogs, for callers who
        see whole catalogs (a review shows definitions that may be held from an
        agent); nobody else's."""
        access = _access(who)
        if not access.sees_whole_catalog:
            return self.none()
        if access.catalogs is None:
            return self
        return self.filter(any_of("catalog__slug", access.catalogs))

    def waiting(self) -> ToolReviewQuerySet:
        return self.filter(state="pending")
