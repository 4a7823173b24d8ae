"""The API docs page (Swagger UI) inside the console: the same navigation as
every other page (its context processor, catalog.navigation, runs here too), so a
person reading the API can get back to the console; and the schema it reads."""

from __future__ import annotations

from typing import Any

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request


class ConsoleSwaggerView(SpectacularSwaggerSplitView):
    """drf-spectacular's split Swagger UI (no inline script), rendered with the
    console's navigation."""

    schema = None  # the page itself is not an API endpoint


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
