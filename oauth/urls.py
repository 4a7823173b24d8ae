"""OAuth's routes: the well-known metadata, the authorization server's
endpoints, and the console's connected clients."""

from django.urls import path

from oauth import views, views_console

app_name = "oauth"

urlpatterns = [
    path(
        ".well-known/oauth-protected-resource",
        views.protected_resource,
        name="protected-resource",
    ),
    path(
        ".well-known/oauth-protected-resource/mcp",
        views.protected_resource,
        name="protected-resource-mcp",
    ),
    path(
        ".well-known/oauth-authorization-server",
        views.authorization_server,
        name="authorization-server",
    ),
    path("oauth/authorize", views.authorize, name="authorize"),
    path("oauth/token", views.token, name="token"),
    path("oauth/register", views.register, name="register"),
    path("oauth/revoke", views.revoke, name="revoke"),
    path("oauth/jwks.json", views.jwks, name="jwks"),
    path("connections/", views_console.connection_list, name="connection-list"),
    path(
        "connections/<uuid:public_id>/revoke",
        views_console.connection_revoke,
        name="connection-revoke",
    ),
]
