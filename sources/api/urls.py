from django.urls import re_path

from config.routers import OptionalSlashRouter
from sources.api.views import CatalogSourceList, SourceViewSet

router = OptionalSlashRouter()
router.register("sources", SourceViewSet, basename="source")

urlpatterns = [
    re_path(
        r"^catalogs/(?P<slug>[-a-zA-Z0-9_]+)/sources/?$",
        CatalogSourceList.as_view(),
        name="catalog-sources",
    ),
    *router.urls,
]
