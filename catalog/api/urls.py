from catalog.api.views import CatalogViewSet, JobViewSet, ToolViewSet
from config.routers import OptionalSlashRouter

router = OptionalSlashRouter()
router.register("catalogs", CatalogViewSet, basename="catalog")
router.register("tools", ToolViewSet, basename="tool")
router.register("jobs", JobViewSet, basename="job")

urlpatterns = router.urls
