"""The call path's one URL (wired in config/urls.py)."""

from django.urls import path

from calls.api_execute import ExecuteCallView

urlpatterns = [
    path("tool-calls/execute", ExecuteCallView.as_view(), name="tool-calls-execute"),
]
