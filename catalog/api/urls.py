from rest_framework.routers import DefaultRouter

from catalog.api.views import CatalogViewSet, JobViewSet, ToolViewSet


class OptionalSlashRouter(DefaultRouter):
    """Routes match with or without the trailing slash (POST can't follow a 301)."""

    def __init__(self) -> None:
        super().__init__()
        self.trailing_slash = "/?"


router = OptionalSlashRouter()
router.register("catalogs", CatalogViewSet, basename="catalog")
router.register("tools", ToolViewSet, basename="tool")
router.register("jobs", JobViewSet, basename="job")

urlpatterns = router.urls
