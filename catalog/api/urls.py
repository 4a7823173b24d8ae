from catalog.api.reviews import ToolReviewViewSet
from catalog.api.views import CatalogViewSet, JobViewSet, ToolViewSet
from config.routers import OptionalSlashRouter

router = OptionalSlashRouter()
router.register("catalogs", CatalogViewSet, basename="catalog")
router.register("tools", ToolViewSet, basename="tool")
router.register("jobs", JobViewSet, basename="job")
router.register("reviews", ToolReviewViewSet, basename="review")

urlpatterns = router.urls
