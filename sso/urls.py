"""Routes of single sign-on and the sign-in settings page."""

from django.urls import path

from sso import views, views_settings

app_name = "sso"

urlpatterns = [
    path("login/sso/", views.sso_start, name="start"),
    path("login/sso/callback/", views.sso_callback, name="callback"),
    path("settings/sign-in/", views_settings.sign_in_settings, name="settings"),
    path(
        "settings/sign-in/password/",
        views_settings.password_switch,
        name="password-switch",
    ),
    path(
        "settings/sign-in/<int:mapping_id>/",
        views_settings.mapping_edit,
        name="mapping-edit",
    ),
    path(
        "settings/sign-in/<int:mapping_id>/delete/",
        views_settings.mapping_delete,
        name="mapping-delete",
    ),
]
