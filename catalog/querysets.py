"""Read queries of the catalog app, as queryset methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Count, Q

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


def _allowed_catalog_slugs(user: AbstractBaseUser | AnonymousUser) -> list[str] | None:
    """Slugs an API client is limited to, or None when the user sees every catalog."""
    client = getattr(user, "api_client", None)
    if client is not None and client.catalogs:
        return list(client.catalogs)
    return None


class CatalogQuerySet(models.QuerySet):
    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> CatalogQuerySet:
        """The one place that scopes catalogs to a caller (people see all of them)."""
        if not user.is_authenticated:
            return self.none()
        slugs = _allowed_catalog_slugs(user)
        return self if slugs is None else self.filter(slug__in=slugs)

    def with_counts(self) -> CatalogQuerySet:
        """Annotate tool counts: in all, by status and by embedding status."""
        count: dict[str, Any] = {"tool_count": Count("tools")}
        for status in ("active", "disabled", "deprecated"):
            count[f"status_{status}"] = Count("tools", filter=Q(tools__status=status))
        for state in ("pending", "ready", "failed"):
            count[f"embedding_{state}"] = Count(
                "tools", filter=Q(tools__embedding_status=state)
            )
        return self.annotate(**count)


class ToolQuerySet(models.QuerySet):
    def usable_by(self, user: AbstractBaseUser | AnonymousUser) -> ToolQuerySet:
        """Tools in the catalogs the caller may see."""
        if not user.is_authenticated:
            return self.none()
        slugs = _allowed_catalog_slugs(user)
        return self if slugs is None else self.filter(catalog__slug__in=slugs)

    def search(self, text: str) -> ToolQuerySet:
        text = text.strip()
        if not text:
            return self
        return self.filter(
            Q(name__icontains=text)
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


class JobQuerySet(models.QuerySet):
    def visible_to(self, user: AbstractBaseUser | AnonymousUser) -> JobQuerySet:
        if not user.is_authenticated:
            return self.none()
        slugs = _allowed_catalog_slugs(user)
        return self if slugs is None else self.filter(catalog__slug__in=slugs)
