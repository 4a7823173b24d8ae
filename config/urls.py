"""Top-level routes: the console, the API, its schema and docs, admin, health."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path

import config.schema  # noqa: F401 - registers the bearer-key scheme for the schema
from config.api_docs import ConsoleSwaggerView, SchemaView
from sso.forms import AdminSignInForm
from sso.views import SignInView
from telemetry.health import healthz
from telemetry.views import metrics

admin.site.login_form = AdminSignInForm

api_v1 = [
    path("", include("catalog.api.urls")),
    path("", include("identity.api.urls")),
    path("", include("selection.api.urls")),
    path("", include("compliance.api.urls")),
    path("", include("sources.api.urls")),
    path("", include("calls.api.urls")),
    path("", include("learning.api.urls")),
    path("", include("notify.api.urls")),
    path("", include("sso.api.urls")),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Off the API (not in its schema): Prometheus' scrape, for a token or admins.
    path("metrics", metrics, name="metrics"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        # People sign in first; the init script is a separate request (no inline
        # script, so the Content-Security-Policy holds on this page too).
        login_required(
            ConsoleSwaggerView.as_view(
                url_name="api-schema", template_name="api_docs.html"
            )
        ),
        name="api-docs",
    ),
    path("admin/", admin.site.urls),
    path("login/", SignInView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("selection.urls")),
    path("", include("catalog.urls")),
    path("", include("identity.urls")),
    path("", include("compliance.urls")),
    path("", include("sources.urls")),
    path("", include("calls.urls")),
    path("", include("learning.urls")),
    path("", include("notify.urls")),
    path("", include("sso.urls")),
    path("", include("oauth.urls")),
    path("", include("vault.urls")),
]

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.page_not_found"
handler500 = "config.errors.server_error"
