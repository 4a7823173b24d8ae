"""The project's URLs plus two views that fail, for the error-page tests."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from config.urls import handler400, handler403, handler404, handler500, urlpatterns


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("boom: a bug in a view")


urlpatterns = [
    path("boom/", boom),
    path("api/v1/boom/", boom),
    *urlpatterns,
]

__all__ = ["handler400", "handler403", "handler404", "handler500", "urlpatterns"]
