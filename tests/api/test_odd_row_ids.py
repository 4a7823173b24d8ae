"""An id in the URL that cannot be a row (a superscript digit, past bigint, zero)
is a 404 for the object, never a 500 (the database never sees it)."""

from __future__ import annotations

import pytest

from notify.models import Webhook
from sources.models import Source
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

ODD_IDS = ["²", "٣", "99999999999999999999", "9223372036854775808", "0"]


@pytest.fixture
def admin_api(api):
    key = make_client_key("odd-ids", "admin")
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    tool = make_tool(name="get_weather")
    Source.objects.create(
        catalog=tool.catalog, name="up", url="https://mcp.example.com/mcp"
    )
    Webhook.objects.create(
        catalog=tool.catalog, name="ops", url="https://hooks.example.com/q"
    )
    return api


@pytest.mark.parametrize("kind", ["sources", "webhooks"])
@pytest.mark.parametrize("odd", ODD_IDS)
def test_an_id_that_cannot_be_a_row_is_a_404(admin_api, kind, odd):
    answer = admin_api.get(f"/api/v1/{kind}/{odd}/")
    assert answer.status_code == 404, answer.content
