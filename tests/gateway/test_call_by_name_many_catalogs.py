"""A tool called by its own name over /mcp, by a key that sees hundreds of
catalogs: the catalog holding it is found by one indexed query that carries
none of the key's catalogs (its cost does not grow with them), and the answer
is the one a key seeing few catalogs gets: a tool in a catalog the key cannot
see, or that its roles hide, is unknown; one in two of its catalogs is refused,
naming that. Timings: bench/tenants.py."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from catalog.models import Catalog, Tool
from catalog.querysets import SENT_CATALOGS
from gateway import services
from identity.models import ApiClient
from identity.services.clients import create_api_client
from tests.factories import make_tool

pytestmark = pytest.mark.django_db(transaction=True)  # the gateway closes connections
MANY = 500
NAME = "weather_now"


@pytest.fixture
def catalogs() -> list[Catalog]:
    rows = [Catalog(slug=f"team-{n:04d}", name=f"Team {n}") for n in range(MANY)]
    return Catalog.objects.bulk_create(rows)


def key_of(name: str, slugs: list[str], **options: Any) -> ApiClient:
    client, _ = create_api_client(name, "agent", catalogs=slugs, **options)
    return client


def slugs(catalogs: list[Catalog]) -> list[str]:
    return [catalog.slug for catalog in catalogs]


def test_a_key_seeing_hundreds_of_catalogs_finds_the_tool_by_one_query_without_them(
    catalogs,
):
    make_tool(catalogs[7], NAME)
    many = key_of("many", slugs(catalogs))
    with CaptureQueriesContext(connection) as seen:
        assert services._catalog_of(many.user, NAME) == catalogs[7].slug
    [query] = seen.captured_queries
    assert catalogs[MANY - 1].slug not in query["sql"]
    assert len(query["sql"]) < 2_000


def test_a_key_seeing_few_catalogs_sends_them_with_the_one_query(catalogs):
    make_tool(catalogs[7], NAME)
    few = key_of("few", slugs(catalogs[:SENT_CATALOGS]))
    with CaptureQueriesContext(connection) as seen:
        assert services._catalog_of(few.user, NAME) == catalogs[7].slug
    [query] = seen.captured_queries
    assert catalogs[SENT_CATALOGS - 1].slug in query["sql"]


@pytest.mark.parametrize("count", [1, SENT_CATALOGS, SENT_CATALOGS + 1, MANY - 1])
def test_a_tool_in_a_catalog_the_key_cannot_see_is_unknown(catalogs, count):
    make_tool(catalogs[MANY - 1], NAME)  # the one catalog the key never sees
    key = key_of(f"blind-{count}", slugs(catalogs[:count]))
    assert Tool.objects.catalogs_calling(key.user, NAME) == []
    with pytest.raises(services.UnknownTool):
        services.call(
            key.user, {"name": NAME, "arguments": {}}, uuid.uuid4(), direct=True
        )


@pytest.mark.parametrize("count", [SENT_CATALOGS, MANY])
def test_a_tool_the_keys_roles_hide_is_unknown_whatever_it_sees(catalogs, count):
    make_tool(catalogs[3], NAME, allowed_roles=["finance"])
    key = key_of(f"roles-{count}", slugs(catalogs[:count]), roles=["support"])
    assert Tool.objects.catalogs_calling(key.user, NAME) == []
    finance = key_of(f"finance-{count}", slugs(catalogs[:count]), roles=["finance"])
    assert Tool.objects.catalogs_calling(finance.user, NAME) == [catalogs[3].slug]


@pytest.mark.parametrize("count", [SENT_CATALOGS, MANY])
def test_a_name_in_two_of_the_keys_catalogs_is_refused_naming_that(catalogs, count):
    make_tool(catalogs[1], NAME)
    make_tool(catalogs[2], NAME)
    key = key_of(f"two-{count}", slugs(catalogs[:count]))
    with pytest.raises(services.ToolRefused, match="in several catalogs; name one"):
        services.call(
            key.user, {"name": NAME, "arguments": {}}, uuid.uuid4(), direct=True
        )
    assert AuditEvent.objects.filter(event_type="mcp_refused").count() == 1


def test_a_name_in_one_seen_and_one_hidden_catalog_calls_the_seen_one(catalogs):
    make_tool(catalogs[1], NAME)
    make_tool(catalogs[MANY - 1], NAME)
    key = key_of("one-hidden", slugs(catalogs[: MANY - 1]))
    assert services._catalog_of(key.user, NAME) == catalogs[1].slug
