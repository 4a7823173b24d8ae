from config.routers import OptionalSlashRouter
from identity.api.views import ApiClientViewSet

router = OptionalSlashRouter()
router.register("clients", ApiClientViewSet, basename="client")

urlpatterns = router.urls
