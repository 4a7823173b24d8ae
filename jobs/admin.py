"""Django admin for jobs: view only, workers write them."""

from __future__ import annotations

from django.contrib import admin

from config.admin import ReadOnlyAdmin
from jobs.models import Job


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "kind",
        "catalog",
        "state",
        "done",
        "total",
        "created",
        "finished",
    ]
    list_filter = ["kind", "state", "catalog"]
    list_select_related = ["catalog"]
    exclude = ["payload"]
