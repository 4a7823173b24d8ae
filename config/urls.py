"""Top-level routes: the console, the API, its schema and docs, admin, health."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from config.health import healthz

api_v1 = [
    path("", include("catalog.api.urls")),
    path("", include("selection.api.urls")),
    path("", include("audit.api.urls")),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="api-schema"),
        name="api-docs",
    ),
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("selection.urls")),
    path("", include("catalog.urls")),
]
