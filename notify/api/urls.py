from django.urls import re_path

from config.routers import OptionalSlashRouter
from notify.api.views import CatalogWebhookList, WebhookViewSet

router = OptionalSlashRouter()
router.include_root_view = False
router.register("webhooks", WebhookViewSet, basename="webhook")

urlpatterns = [
    re_path(
        r"^catalogs/(?P<slug>[-a-zA-Z0-9_]+)/webhooks/?$",
        CatalogWebhookList.as_view(),
        name="catalog-webhooks",
    ),
    *router.urls,
]
