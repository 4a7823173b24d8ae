"""The API docs page (Swagger UI) inside the console: the same navigation as
every other page (its context processor, catalog.navigation, runs here too), so a
person reading the API can get back to the console."""

from __future__ import annotations

from drf_spectacular.views import SpectacularSwaggerSplitView


class ConsoleSwaggerView(SpectacularSwaggerSplitView):
    """drf-spectacular's split Swagger UI (no inline script), rendered with the
    console's navigation."""

    schema = None  # the page itself is not an API endpoint
