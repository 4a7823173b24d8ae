"""Routes of the compliance console."""

from django.urls import path

from compliance import views, views_changes

app_name = "audit"

urlpatterns = [
    path("audit/", views.event_list, name="event-list"),
    path("audit/verify/", views.verify, name="verify"),
    path("audit/dashboard/", views.dashboard, name="dashboard"),
    path("audit/export", views.export, name="export"),
    path("audit/<int:event_id>/", views.event_detail, name="event-detail"),
    path("audit/<int:event_id>/why-not/", views.why_not_box, name="why-not"),
    # What a selection depended on, and the change log (compliance.views_changes).
    path("audit/changes/", views_changes.change_log, name="change-log"),
    path(
        "audit/tools/<slug:catalog>/<path:name>/v<int:version>/",
        views_changes.tool_version,
        name="tool-version",
    ),
    path(
        "audit/<int:event_id>/tools/<path:name>/",
        views_changes.tool_at_selection,
        name="tool-at-selection",
    ),
    path(
        "audit/settings/<slug:catalog>/v<int:version>/",
        views_changes.settings_version,
        name="settings-version",
    ),
]
