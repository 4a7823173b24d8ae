from django.urls import path

from selection.api.views import SelectBatchView, SelectionSettingsView, SelectView

urlpatterns = [
    path("select", SelectView.as_view(), name="select"),
    path("select/batch", SelectBatchView.as_view(), name="select-batch"),
    path(
        "catalogs/<slug:slug>/selection-settings",
        SelectionSettingsView.as_view(),
        name="selection-settings",
    ),
]
