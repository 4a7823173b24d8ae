"""Routes of labels, evaluations and confusable tools: the API (under api/v1/)
and the console pages, included once from config/urls.py."""

from django.urls import path

from learning import api, views

app_name = "learning"

API = "api/v1/catalogs/<slug:slug>/"
PAGES = "catalogs/<slug:slug>/"

urlpatterns = [
    path(f"{API}labels", api.LabelListView.as_view(), name="api-labels"),
    path(f"{API}labels/review", api.LabelReviewView.as_view(), name="api-label-review"),
    path(
        f"{API}labels/proposals",
        api.LabelProposalsView.as_view(),
        name="api-label-proposals",
    ),
    path(
        f"{API}labels/<int:label_id>",
        api.LabelDetailView.as_view(),
        name="api-label-detail",
    ),
    path(
        f"{API}evaluations",
        api.EvaluationListView.as_view(),
        name="api-evaluations",
    ),
    path(
        f"{API}evaluations/<int:run_id>",
        api.EvaluationDetailView.as_view(),
        name="api-evaluation-detail",
    ),
    path(f"{API}confusable", api.ConfusableView.as_view(), name="api-confusable"),
    path(f"{PAGES}labels/", views.label_list, name="labels"),
    path(f"{PAGES}labels/upload/", views.label_upload, name="label-upload"),
    path(f"{PAGES}labels/delete/", views.label_delete, name="label-delete"),
    path(f"{PAGES}labels/review/", views.label_review, name="label-review"),
    path(f"{PAGES}evaluation/", views.evaluation_page, name="evaluation"),
    path(
        f"{PAGES}evaluation/<int:run_id>/requests/<int:index>/",
        views.evaluation_row,
        name="evaluation-row",
    ),
]
