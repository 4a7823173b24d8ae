"""The console's routes of labels and evaluations (the API's are in
learning/api/urls.py)."""

from django.urls import path

from learning import views

app_name = "learning"

PAGES = "catalogs/<slug:slug>/"

urlpatterns = [
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
