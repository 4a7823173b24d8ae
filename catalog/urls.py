"""Routes of the curators' console."""

from django.urls import path
from django.views.generic import RedirectView

from catalog.views import bulk, catalogs, edit, history, jobs, reviews, tools

app_name = "console"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="console:tool-list"), name="home"),
    path("tools/", tools.tool_list, name="tool-list"),
    path(
        "first-steps/dismiss/",
        tools.first_steps_dismiss,
        name="first-steps-dismiss",
    ),
    path("tools/export/", tools.tool_export, name="tool-export"),
    path("tools/bulk/", bulk.tool_bulk, name="tool-bulk"),
    path("tools/new/", edit.tool_create, name="tool-create"),
    path("tools/validate-schema/", edit.validate_schema, name="validate-schema"),
    path("tools/<int:tool_id>/", tools.tool_detail, name="tool-detail"),
    path("tools/<int:tool_id>/edit/", edit.tool_edit, name="tool-edit"),
    path("tools/<int:tool_id>/status/", tools.tool_status, name="tool-status"),
    path("tools/<int:tool_id>/delete/", tools.tool_delete, name="tool-delete"),
    path("tools/<int:tool_id>/history/", history.tool_history, name="tool-history"),
    path("tools/<int:tool_id>/diff/", history.tool_diff, name="tool-diff"),
    path("reviews/", reviews.review_list, name="review-list"),
    path("reviews/<int:review_id>/", reviews.review_detail, name="review-detail"),
    path(
        "reviews/<int:review_id>/<str:decision>/",
        reviews.review_decide,
        name="review-decide",
    ),
    path("import/", jobs.import_tools, name="import"),
    path("jobs/", jobs.job_list, name="job-list"),
    path("jobs/<int:job_id>/", jobs.job_detail, name="job-detail"),
    path("catalogs/", catalogs.catalog_list, name="catalog-list"),
    path(
        "catalogs/<slug:slug>/changes/",
        history.catalog_changes_page,
        name="catalog-changes",
    ),
    path(
        "catalogs/<slug:slug>/changes/<int:change_id>/",
        history.change_detail,
        name="change-detail",
    ),
    path(
        "catalogs/<slug:slug>/reindex/",
        catalogs.catalog_reindex,
        name="catalog-reindex",
    ),
]
