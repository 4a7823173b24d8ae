from django.urls import path

from selection.api.views import (
    SelectBatchView,
    SelectionSettingsView,
    SelectView,
    SettingsRestoreView,
    SettingsVersionsView,
    ToolCallsValidateView,
    ValidateCallView,
)

urlpatterns = [
    path("select", SelectView.as_view(), name="select"),
    path("select/batch", SelectBatchView.as_view(), name="select-batch"),
    path("validate", ValidateCallView.as_view(), name="validate"),
    path(
        "tool-calls/validate",
        ToolCallsValidateView.as_view(),
        name="tool-calls-validate",
    ),
    path(
        "catalogs/<slug:slug>/selection-settings",
        SelectionSettingsView.as_view(),
        name="selection-settings",
    ),
    path(
        "catalogs/<slug:slug>/selection-settings/versions",
        SettingsVersionsView.as_view(),
        name="selection-settings-versions",
    ),
    path(
        "catalogs/<slug:slug>/selection-settings/versions/<int:version>/restore",
        SettingsRestoreView.as_view(),
        name="selection-settings-restore",
    ),
]
