"""Catalog console helpers: the writers-only guard and lookups within access.

Page plumbing (render_page, paginate, acting_user) is config.pages'."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404

from catalog.models import Tool
from identity.access import access_for
from jobs.models import Job

View = Callable[..., HttpResponse]


def writer_required(view: View) -> View:
    """Signed in (else the login page) and allowed to write (else 403)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not access_for(request.user).can_write:
            raise PermissionDenied(
                "writing the catalog needs the curator or admin scope"
            )
        return view(request, *args, **kwargs)

    return login_required(wrapped)


def get_tool_for_user(request: HttpRequest, tool_id: int) -> Tool:
    tools = Tool.objects.visible_to(request.user).select_related("catalog")
    return get_object_or_404(tools, pk=tool_id)


def get_job_for_user(request: HttpRequest, job_id: int) -> Job:
    jobs = (
        Job.objects.visible_to(request.user)
        .select_related("catalog", "created_by")
        .defer("payload")
    )
    return get_object_or_404(jobs, pk=job_id)
