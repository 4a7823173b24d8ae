"""The learn endpoints (learning.api_learn), included from config/urls.py."""

from django.urls import path

from learning.api_learn import LearnApplyView, LearnDetailView, LearnView

urlpatterns = [
    path("api/v1/catalogs/<slug:slug>/learn", LearnView.as_view(), name="learn"),
    path(
        "api/v1/catalogs/<slug:slug>/learn/<int:version>",
        LearnDetailView.as_view(),
        name="learn-detail",
    ),
    path(
        "api/v1/catalogs/<slug:slug>/learn/<int:version>/apply",
        LearnApplyView.as_view(),
        name="learn-apply",
    ),
]
