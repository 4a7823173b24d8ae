"""The audit log in the admin: read-only, like the log itself."""

from __future__ import annotations

from django.contrib import admin

from audit.models import AuditEvent
from config.admin import ReadOnlyAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["created", "event_type", "actor_name", "catalog_slug", "summary"]
    list_filter = ["event_type", "catalog_slug"]
    search_fields = ["actor_name", "summary", "request_id"]
    date_hierarchy = "created"
