"""Console routes for selection: the "Try it" page and per-catalog settings."""

from django.urls import path

from selection import views

app_name = "selection"

urlpatterns = [
    path("try/", views.try_it, name="try-it"),
    path(
        "catalogs/<slug:slug>/selection-settings/",
        views.selection_settings,
        name="settings",
    ),
]
