"""Console routes for selection: the "Try it" page and per-catalog settings."""

from django.urls import path

from selection import views, views_trust

app_name = "selection"

urlpatterns = [
    path("try/", views.try_it, name="try-it"),
    path(
        "catalogs/<slug:slug>/selection-settings/",
        views.selection_settings,
        name="settings",
    ),
    path(
        "catalogs/<slug:slug>/selection-settings/try/",
        views.try_settings_view,
        name="settings-try",
    ),
    path(
        "catalogs/<slug:slug>/selection-settings/evaluate/",
        views.evaluate_settings_view,
        name="settings-evaluate",
    ),
    path(
        "catalogs/<slug:slug>/trust-policy/",
        views_trust.trust_policy,
        name="trust",
    ),
    path(
        "catalogs/<slug:slug>/selection-settings/history/",
        views.settings_history,
        name="settings-history",
    ),
    path(
        "catalogs/<slug:slug>/selection-settings/versions/<int:version>/restore/",
        views.restore_settings,
        name="settings-restore",
    ),
]
