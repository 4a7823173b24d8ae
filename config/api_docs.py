"""The API docs page (Swagger UI) inside the console: the same navigation as
every other page, so a person reading the API can get back to the console."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.response import Response

from config.pages import nav_context


class ConsoleSwaggerView(SpectacularSwaggerSplitView):
    """drf-spectacular's split Swagger UI (no inline script), with the
    console's navigation context."""

    schema = None  # the page itself is not an API endpoint

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        if isinstance(response.data, dict):
            response.data.update(nav_context(request))
        return response
