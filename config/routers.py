"""The API's router, shared by every app's api/urls.py."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter


class OptionalSlashRouter(DefaultRouter):
    """Routes match with or without the trailing slash (POST can't follow a 301)."""

    def __init__(self) -> None:
        super().__init__()
        self.trailing_slash = "/?"
