"""POST /api/v1/catalogs/{slug}/learn: queue a learn of the catalog's accepted
labels (``{"apply": true}`` applies it when it finishes, else it only proposes);
GET .../learn/{version}: the learn's state and cross-validated report;
POST .../learn/{version}/apply: apply a finished proposal.

Curators (and admins) of a catalog they see learn it; compliance reads; agents
never: the learnt model is made of the catalog's labelled requests."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from catalog.lookups import get_catalog_for_user
from catalog.models import Catalog
from config.http import request_id
from config.ratelimit import WriteRateThrottle
from config.strict import StrictFieldsMixin
from identity.access import access_for
from learning.models import LearntModel
from learning.services import learn
from selection.registry import RegressionRefused

LEARNERS = "permission: learning a catalog needs the curator or admin scope"
READERS = "permission: a catalog's learnt models are read by curators, compliance "
"and admins (they are made of its labelled requests)"


class LearnInputSerializer(StrictFieldsMixin, serializers.Serializer):
    apply = serializers.BooleanField(required=False, default=False)
    accept_regression = serializers.CharField(
        required=False, allow_blank=False, max_length=1000
    )


class ApplyInputSerializer(StrictFieldsMixin, serializers.Serializer):
    accept_regression = serializers.CharField(
        required=False, allow_blank=False, max_length=1000
    )


def _catalog(request: Request, slug: str, *, write: bool) -> Catalog:
    catalog = get_catalog_for_user(request.user, slug)
    access = access_for(request.user)
    if write and not access.can_write:
        raise PermissionDenied(LEARNERS)
    if not access.sees_whole_catalog:
        raise PermissionDenied(READERS)
    return catalog


MAX_VERSION = 2**31 - 1  # a PositiveIntegerField


def learn_for(catalog: Catalog, version: int) -> LearntModel:
    """The catalog's learn of that version, else 404 (any number is safe)."""
    if not 1 <= version <= MAX_VERSION:
        raise Http404(f"learn: no learn {version} of this catalog")
    return get_object_or_404(LearntModel, catalog=catalog, version=version)


def render(model: LearntModel) -> dict[str, Any]:
    """The learn as the API shows it (no example texts or vectors)."""
    return {
        "version": model.version,
        "state": model.state,
        "progress": model.progress,
        "error": model.error,
        "apply": model.apply,
        "params": {k: v for k, v in model.params.items() if k != "tools"},
        "cv": model.cv,
        "proposed_settings": model.proposed_settings,
        "applied_settings_version": model.applied_settings_version,
        "created": model.created,
        "finished": model.finished,
    }


class LearnView(generics.GenericAPIView):
    """Queue a learn (202 with its version and where to watch it)."""

    serializer_class = LearnInputSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    def post(self, request: Request, slug: str) -> Response:
        catalog = _catalog(request, slug, write=True)
        serializer = self.get_serializer(data=request.data or {})
        serializer.is_valid(raise_exception=True)
        model = learn.request_learn(
            catalog,
            actor=request.user,
            apply=serializer.validated_data["apply"],
            accept_regression=serializer.validated_data.get("accept_regression", ""),
        )
        body = render(model)
        body["url"] = f"/api/v1/catalogs/{catalog.slug}/learn/{model.version}"
        return Response(body, status=status.HTTP_202_ACCEPTED)


class LearnDetailView(generics.GenericAPIView):
    """One learn: state, progress, cross-validated report, proposal."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str, version: int) -> Response:
        catalog = _catalog(request, slug, write=False)
        model = learn_for(catalog, version)
        return Response(render(model))


class LearnApplyView(generics.GenericAPIView):
    """Apply a finished learn's proposal (gated and audited like any settings
    change: 409 naming the rule and the delta unless accept_regression)."""

    serializer_class = ApplyInputSerializer
    permission_classes = [permissions.IsAuthenticated]
    throttle_classes = [WriteRateThrottle]

    def post(self, request: Request, slug: str, version: int) -> Response:
        catalog = _catalog(request, slug, write=True)
        model = learn_for(catalog, version)
        serializer = self.get_serializer(data=request.data or {})
        serializer.is_valid(raise_exception=True)
        try:
            settings_version = learn.apply_model(
                model,
                actor=request.user,
                accept_regression=serializer.validated_data.get(
                    "accept_regression", ""
                ),
                request_id=request_id(request),
            )
        except RegressionRefused as exc:
            body = {"detail": str(exc), **exc.report}
            return Response(body, status=status.HTTP_409_CONFLICT)
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        body = render(model)
        body["settings_version"] = settings_version
        return Response(body)
