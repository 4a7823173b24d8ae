"""The console's routes of calls: the approvals page and a person's decision."""

from django.urls import path

from calls import views

app_name = "calls"

urlpatterns = [
    path("approvals/", views.approval_list, name="approval-list"),
    path(
        "approvals/<uuid:approval_id>/<str:decision>/",
        views.approval_decide,
        name="approval-decide",
    ),
]
