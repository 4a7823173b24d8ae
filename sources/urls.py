"""Console routes of sources."""

from django.urls import path

from sources import views

app_name = "sources"

urlpatterns = [
    path("catalogs/<slug:slug>/sources/", views.source_list, name="source-list"),
    path("sources/<int:source_id>/", views.source_detail, name="source-detail"),
    path("sources/<int:source_id>/test/", views.source_test, name="source-test"),
    path("sources/<int:source_id>/sync/", views.source_sync, name="source-sync"),
    path("sources/<int:source_id>/delete/", views.source_delete, name="source-delete"),
]
