"""Console routes of people's connections and a source's OAuth client."""

from django.urls import path

from vault import views

app_name = "vault"

urlpatterns = [
    path("connections/", views.connection_list, name="connection-list"),
    path(
        "connections/sources/<int:source_id>/connect/",
        views.connect,
        name="connect",
    ),
    path(
        "connections/callback/<int:source_id>/",
        views.callback,
        name="callback",
    ),
    path(
        "connections/clients/<int:source_id>/",
        views.client_document,
        name="client-document",
    ),
    path(
        "connections/<str:connection_id>/disconnect/",
        views.disconnect_view,
        name="disconnect",
    ),
    path(
        "sources/<int:source_id>/oauth-client/",
        views.source_client,
        name="source-client",
    ),
]
