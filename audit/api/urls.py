from audit.api.views import AuditEventViewSet
from catalog.api.urls import OptionalSlashRouter

router = OptionalSlashRouter()
router.include_root_view = False
router.register("audit", AuditEventViewSet, basename="audit")

urlpatterns = router.urls
