from django.urls import path

from config.routers import OptionalSlashRouter
from sso.api.views import ClaimMappingViewSet, SignInPolicyView

router = OptionalSlashRouter()
router.register("sso/mappings", ClaimMappingViewSet, basename="claim-mapping")

urlpatterns = [
    path("sso/policy", SignInPolicyView.as_view(), name="sign-in-policy"),
    *router.urls,
]
