"""The audit log in the admin: read-only, like the log itself."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created", "event_type", "actor_name", "catalog_slug", "summary"]
    list_filter = ["event_type", "catalog_slug"]
    search_fields = ["actor_name", "summary", "request_id"]
    date_hierarchy = "created"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
