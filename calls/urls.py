"""Routes of approvals: the console page (``urlpatterns``) and the API's
(``api_urlpatterns``, under /api/v1/). The call path's own route is i22-calls'
(calls/urls_execute.py, wired in config/urls.py)."""

from django.urls import path

from calls import views
from calls.api import ApprovalViewSet
from config.routers import OptionalSlashRouter

app_name = "calls"

router = OptionalSlashRouter()
router.include_root_view = False
router.register("approvals", ApprovalViewSet, basename="approval")

api_urlpatterns = router.urls

urlpatterns = [
    path("approvals/", views.approval_list, name="approval-list"),
    path(
        "approvals/<uuid:approval_id>/<str:decision>/",
        views.approval_decide,
        name="approval-decide",
    ),
]
