"""Django admin for the catalog: a window on the data, writing only through the
services (or not at all, for the append-only and secret-bearing models)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from catalog import services
from catalog.models import TOOL_BOOKKEEPING, Catalog, Tool, ToolChange
from catalog.names import ToolConflict, refuse
from catalog.services.tools import (
    spec_errors,
    tool_to_spec,
    wanted_names,
)
from catalog.spec import ToolSpec
from config.admin import ReadOnlyAdmin, staff_user


@admin.register(Catalog)
class CatalogAdmin(admin.ModelAdmin):
    """Catalogs are added through create_catalog; no service edits or deletes one
    (deleting would cascade to tools and their history), so neither may the admin."""

    list_display = ["slug", "name", "version", "active_embedding_model", "updated"]
    search_fields = ["slug", "name"]
    fields = ["slug", "name", "description", "version", "active_embedding_model"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["version", "active_embedding_model"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: Catalog, form: Any, change: bool
    ) -> None:
        created = services.create_catalog(
            obj.slug, obj.name, obj.description, actor=staff_user(request)
        )
        obj.pk = created.pk


class ToolAdminForm(forms.ModelForm):
    """Runs the same checks as create_tool/update_tool so the admin shows the
    policy's reasons on the form instead of failing on save."""

    class Meta:
        model = Tool
        exclude: list[str] = []

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        values = {
            name: data[name] if name in data else getattr(self.instance, name)
            for name in ToolSpec.field_names()
        }
        stored = Tool.objects.filter(pk=self.instance.pk).first()
        renamed = stored is None or stored.name != values["name"]
        catalog = data.get("catalog") or getattr(stored, "catalog", None)
        spec = ToolSpec(**values)
        wanted = wanted_names(spec, stored)
        try:
            errors = spec_errors(spec, new_name=renamed)
            if wanted and catalog is not None:
                # No lock here: the save goes through the services, which check again.
                exclude = stored.pk if stored else None
                refuse(catalog.pk, wanted, errors, exclude=exclude)
            elif errors:
                raise ValidationError(errors)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)
        except ToolConflict as exc:
            self.add_error(exc.field if exc.field in self.fields else None, str(exc))
        return data


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    """Saves and deletes go through the tool services, so every admin edit gets
    its change record, catalog version bump and re-embedding like any other."""

    form = ToolAdminForm
    list_display = [
        "name",
        "catalog",
        "category",
        "status",
        "safe",
        "risk_level",
        "embedding_status",
        "version",
        "updated",
    ]
    list_filter = [
        "catalog",
        "status",
        "safe",
        "risk_level",
        "requires_approval",
        "embedding_status",
        "category",
    ]
    search_fields = ["name", "title", "description", "category"]
    list_select_related = ["catalog"]
    readonly_fields = [
        "version",
        "changed_version",
        "content_hash",
        "prompt_tokens",
        *TOOL_BOOKKEEPING,
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # A tool never moves between catalogs.
        extra = ["catalog"] if obj is not None else []
        return [*self.readonly_fields, *extra]

    def save_model(
        self, request: HttpRequest, obj: Tool, form: Any, change: bool
    ) -> None:
        spec = tool_to_spec(obj)
        rid = getattr(request, "request_id", None)
        if change:
            stored = Tool.objects.get(pk=obj.pk)
            result = services.update_tool(
                stored, spec, actor=staff_user(request), request_id=rid
            )
            saved = result.tool or stored
        else:
            saved = services.create_tool(
                obj.catalog, spec, actor=staff_user(request), request_id=rid
            )
        obj.pk = saved.pk

    def delete_model(self, request: HttpRequest, obj: Tool) -> None:
        services.delete_tool(obj, actor=staff_user(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Tool]) -> None:
        for tool in queryset:
            services.delete_tool(tool, actor=staff_user(request))


@admin.register(ToolChange)
class ToolChangeAdmin(ReadOnlyAdmin):
    list_display = [
        "tool_name",
        "catalog",
        "action",
        "version",
        "actor_name",
        "created",
    ]
    list_filter = ["action", "catalog"]
    search_fields = ["tool_name", "actor_name"]
    list_select_related = ["catalog"]
