"""Console routes of webhooks."""

from django.urls import path

from notify import views

app_name = "notify"

urlpatterns = [
    path("catalogs/<slug:slug>/webhooks/", views.webhook_list, name="webhook-list"),
    path("webhooks/<int:webhook_id>/", views.webhook_detail, name="webhook-detail"),
    path(
        "webhooks/<int:webhook_id>/rotate/", views.webhook_rotate, name="webhook-rotate"
    ),
    path(
        "webhooks/<int:webhook_id>/delete/", views.webhook_delete, name="webhook-delete"
    ),
    path(
        "webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/replay/",
        views.delivery_replay,
        name="delivery-replay",
    ),
]
