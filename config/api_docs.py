"""The API docs page (Swagger UI) inside the console: the same navigation as
every other page, so a person reading the API can get back to the console; and
the schema it reads."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
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


class SchemaView(SpectacularAPIView):
    """The OpenAPI schema (YAML, or JSON when asked); an error, such as a method
    it does not take, in the API's JSON envelope rather than as a YAML document."""

    def finalize_response(
        self, request: Request, response: Any, *args: Any, **kwargs: Any
    ) -> Any:
        if getattr(response, "exception", False):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)
