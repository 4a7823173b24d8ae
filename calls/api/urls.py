"""The API's routes of calls (under /api/v1/): approvals and the call path."""

from django.urls import path

from calls.api.execute import ExecuteCallView
from calls.api.views import ApprovalViewSet
from config.routers import OptionalSlashRouter

router = OptionalSlashRouter()
router.include_root_view = False
router.register("approvals", ApprovalViewSet, basename="approval")

urlpatterns = [
    path("tool-calls/execute", ExecuteCallView.as_view(), name="tool-calls-execute"),
    *router.urls,
]
