"""Console routes of people's connections and a source's OAuth client."""

from django.urls import path

from vault import views

app_name = "vault"

urlpatterns = [
    path("upstream-accounts/", views.connection_list, name="connection-list"),
    path(
        "upstream-accounts/sources/<int:source_id>/connect/",
        views.connect,
        name="connect",
    ),
    path(
        "upstream-accounts/callback/<int:source_id>/",
        views.callback,
        name="callback",
    ),
    path(
        "upstream-accounts/clients/<int:source_id>/",
        views.client_document,
        name="client-document",
    ),
    path(
        "upstream-accounts/<str:connection_id>/disconnect/",
        views.disconnect_view,
        name="disconnect",
    ),
    path(
        "sources/<int:source_id>/oauth-client/",
        views.source_client,
        name="source-client",
    ),
]
