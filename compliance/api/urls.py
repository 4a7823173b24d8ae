from compliance.api.views import AuditEventViewSet
from config.routers import OptionalSlashRouter

router = OptionalSlashRouter()
router.include_root_view = False
router.register("audit", AuditEventViewSet, basename="audit")

urlpatterns = router.urls
