"""Sources and webhooks keep one rule for what a caller's writes cost
(catalog.api.owned and catalog.owned_pages): over the API and on the console,
each add, edit and delete of either kind costs one of the caller's limit, a read
nothing, and past the limit the answer is 429 with nothing written. And the
shared API never answers with a kind's secret fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model
from rest_framework import serializers
from rest_framework.test import APIClient

from audit.models import AuditEvent
from catalog.api.owned import OwnedViewSet
from catalog.services import ensure_default_catalog
from config import ratelimit
from identity.models import ApiClient
from notify.models import Webhook
from notify.services import create_webhook
from sources.models import Source
from sources.services import create_source
from tests.factories import make_client_key

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Kind:
    model: type[Model]
    api: str  # the catalog's list; one object is under /api/v1/<plural>/<id>
    page: str  # the console's list; one object's page is /<plural>/<id>/
    added: dict[str, Any]  # an add over the API
    edit: dict[str, Any]  # an edit over the API
    added_on_page: dict[str, Any]
    edit_on_page: dict[str, Any]

    def make(self, root: Any) -> Any:
        catalog = ensure_default_catalog()
        if self.model is Source:
            url = "http://127.0.0.1:9/mcp"
            return create_source(catalog, name="files", url=url, actor=root).source
        url = "http://127.0.0.1:9/hook"
        return create_webhook(catalog, name="ops", url=url, actor=root)[0]

    @property
    def plural(self) -> str:
        return str(self.model._meta.verbose_name_plural)


HOOK_FIELDS = {"events": ["approval.requested"], "format": "quiver"}
KINDS = [
    Kind(
        Source,
        "/api/v1/catalogs/default/sources",
        "/catalogs/default/sources/",
        {"name": "more", "url": "http://127.0.0.1:9/more"},
        {"timeout_seconds": 12},
        {"name": "more", "url": "http://127.0.0.1:9/more", "timeout_seconds": 30},
        {"name": "files", "url": "http://127.0.0.1:9/mcp", "timeout_seconds": 12},
    ),
    Kind(
        Webhook,
        "/api/v1/catalogs/default/webhooks",
        "/catalogs/default/webhooks/",
        {"name": "pager", "url": "http://127.0.0.1:9/pager"},
        {"active": False},
        {"name": "pager", "url": "http://127.0.0.1:9/pager", **HOOK_FIELDS},
        {"name": "ops", "url": "http://127.0.0.1:9/hook2", **HOOK_FIELDS},
    ),
]


@pytest.fixture(autouse=True)
def counted_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh counter per test that never asks Redis, and a clock standing
    still inside one window."""
    counter = ratelimit.Counter()
    counter._redis_down_until = float("inf")
    monkeypatch.setattr(ratelimit, "COUNTER", counter)
    monkeypatch.setattr(ratelimit, "clock", lambda: 1_800_000_010.0)


def changes() -> int:
    return AuditEvent.objects.filter(
        event_type__in=["source_changed", "webhook_changed"]
    ).count()


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.plural)
def test_an_api_caller_pays_one_per_write_and_is_refused_past_the_limit(
    kind: Kind, admin_user: Any
) -> None:
    found = kind.make(admin_user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {make_client_key('caller', 'admin')}")
    ApiClient.objects.filter(name="caller").update(rate_limit_per_minute=2)
    one = f"/api/v1/{kind.plural}/{found.pk}"
    for _ in range(3):
        assert api.get(kind.api).status_code == 200
        assert api.get(one).status_code == 200
    assert api.patch(one, kind.edit, format="json").status_code == 200
    assert api.post(kind.api, kind.added, format="json").status_code == 201
    before = changes()
    refused = api.delete(one)
    assert refused.status_code == 429 and "Retry-After" in refused
    assert kind.model._default_manager.filter(pk=found.pk).exists()
    assert changes() == before


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.plural)
def test_a_person_pays_one_per_write_on_the_console_and_is_refused_past_it(
    kind: Kind, admin_user: Any, client: Any, settings: Any
) -> None:
    settings.QUIVER_RATE_LIMIT_PER_MINUTE = 1
    found = kind.make(admin_user)
    client.force_login(admin_user)
    one = f"/{kind.plural}/{found.pk}/"
    for _ in range(3):
        assert client.get(kind.page).status_code == 200
        assert client.get(one).status_code == 200
    assert client.post(one, kind.edit_on_page).status_code == 302
    before = changes()
    refused = client.post(kind.page, kind.added_on_page)
    assert refused.status_code == 429 and "Retry-After" in refused
    assert kind.model._default_manager.count() == 1
    assert changes() == before


@pytest.mark.parametrize("shown", [["id", "name", "headers_encrypted"], "__all__"])
def test_a_view_whose_answer_names_a_secret_field_is_refused_when_defined(
    shown: Any,
) -> None:
    class Leaky(serializers.ModelSerializer):
        class Meta:
            model = Source
            fields = shown

    with pytest.raises(ImproperlyConfigured, match="headers_encrypted"):

        class LeakySourceViewSet(OwnedViewSet):
            model = Source
            serializer_class = Leaky
