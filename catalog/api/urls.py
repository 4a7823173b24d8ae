from rest_framework.routers import DefaultRouter

from catalog.api.views import CatalogViewSet, JobViewSet, ToolViewSet

router = DefaultRouter()
router.register("catalogs", CatalogViewSet, basename="catalog")
router.register("tools", ToolViewSet, basename="tool")
router.register("jobs", JobViewSet, basename="job")

urlpatterns = router.urls
