"""The API's routes of labels, evaluations, confusable tools and learning (under
/api/v1/)."""

from django.urls import path

from learning.api import learn, views

CATALOG = "catalogs/<slug:slug>/"

urlpatterns = [
    path(f"{CATALOG}labels", views.LabelListView.as_view(), name="label-list"),
    path(
        f"{CATALOG}labels/review",
        views.LabelReviewView.as_view(),
        name="label-review",
    ),
    path(
        f"{CATALOG}labels/proposals",
        views.LabelProposalsView.as_view(),
        name="label-proposals",
    ),
    path(
        f"{CATALOG}labels/<int:label_id>",
        views.LabelDetailView.as_view(),
        name="label-detail",
    ),
    path(
        f"{CATALOG}evaluations",
        views.EvaluationListView.as_view(),
        name="evaluation-list",
    ),
    path(
        f"{CATALOG}evaluations/<int:run_id>",
        views.EvaluationDetailView.as_view(),
        name="evaluation-detail",
    ),
    path(f"{CATALOG}confusable", views.ConfusableView.as_view(), name="confusable"),
    path(f"{CATALOG}learn", learn.LearnView.as_view(), name="learn"),
    path(
        f"{CATALOG}learn/<int:version>",
        learn.LearnDetailView.as_view(),
        name="learn-detail",
    ),
    path(
        f"{CATALOG}learn/<int:version>/apply",
        learn.LearnApplyView.as_view(),
        name="learn-apply",
    ),
]
