"""A key that sees many catalogs reads the same answers, at the same cost in
queries, as keys that see each of them, and never a catalog beyond its own.

The catalogs API counts each page's tools and tells each page's versions in a
few grouped queries, whatever the key sees; the reviews, jobs and audit lists
match a key's catalogs as one array parameter. A key of sixty catalogs pages
through exactly its sixty (counts of the tools it may see, versions as it is
told them), never the catalog beside them, and every page costs the queries a
key of one catalog pays."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from catalog.models import Catalog, ToolReview
from catalog.services import set_tool_status, update_tool
from catalog.services.tools import tool_to_spec
from jobs.models import Job
from tests.factories import make_client_key, make_tool

pytestmark = pytest.mark.django_db

MANY = 60  # more than a page (50)
OUTSIDE = "zz-outside"  # sorts after every one of the key's: a page could reach it


@pytest.fixture
def catalogs(db: None) -> list[str]:
    """``MANY`` catalogs, a few with tools an agent may and may not see (roles,
    unsafe, one hidden by a change), and one more catalog nobody's key names."""
    slugs = [f"team-{n:02d}" for n in range(MANY)]
    Catalog.objects.bulk_create(Catalog(slug=s, name=s) for s in [*slugs, OUTSIDE])
    for slug in (slugs[0], slugs[49], slugs[50], OUTSIDE):
        catalog = Catalog.objects.get(slug=slug)
        make_tool(catalog, f"open_{slug.replace('-', '_')}")
        make_tool(catalog, "billing_only", allowed_roles=["billing"])
        make_tool(catalog, "wipe_disk", safe=False)
        hidden = make_tool(catalog, "was_open")
        spec = tool_to_spec(hidden)
        spec.allowed_roles = ["ops"]  # a change that hides it from agents
        update_tool(hidden, spec, actor=None)
    first = Catalog.objects.get(slug=slugs[50]).tools.order_by("id")[0]
    set_tool_status(first, "deprecated", actor=None)
    return slugs


def reader(scope: str, slugs: list[str]) -> APIClient:
    api = APIClient()
    key = make_client_key(f"{scope}-{len(slugs)}-{slugs[0]}", scope, catalogs=slugs)
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def pages(api: APIClient, path: str) -> tuple[list[dict[str, Any]], list[int]]:
    """Every item of a list, following ``next``; the queries each page took."""
    items, queries, url = [], [], f"/api/v1/{path}"
    while url:
        with CaptureQueriesContext(connection) as taken:
            response = api.get(url)
        assert response.status_code == 200, response.json()
        items += response.json()["results"]
        queries.append(len(taken.captured_queries))
        url = response.json()["next"]
    return items, queries


def test_a_key_of_many_catalogs_pages_through_exactly_its_own(catalogs):
    found, _ = pages(reader("agent", catalogs), "catalogs")

    assert [c["slug"] for c in found] == catalogs  # in slug order, none twice


@pytest.mark.parametrize("scope", ["agent", "curator"])
def test_each_catalog_reads_as_a_key_of_that_catalog_alone_reads_it(catalogs, scope):
    found, _ = pages(reader(scope, catalogs), "catalogs")
    by_slug = {c["slug"]: c for c in found}

    for slug in (catalogs[0], catalogs[1], catalogs[49], catalogs[50]):
        alone, _ = pages(reader(scope, [slug]), "catalogs")
        assert by_slug[slug] == alone[0]


def test_the_counts_are_of_the_tools_the_key_may_see(catalogs):
    found, _ = pages(reader("agent", catalogs), "catalogs")
    by_slug = {c["slug"]: c for c in found}

    assert by_slug[catalogs[0]]["tool_count"] == 1  # not roles', unsafe or hidden
    assert by_slug[catalogs[50]]["counts"]["status"]["deprecated"] == 1
    assert by_slug[catalogs[1]]["tool_count"] == 0
    curator, _ = pages(reader("curator", catalogs), "catalogs")
    assert {c["slug"]: c for c in curator}[catalogs[0]]["tool_count"] == 4


def test_a_page_of_catalogs_costs_the_queries_of_a_page_of_one(catalogs):
    _, one = pages(reader("agent", [catalogs[0]]), "catalogs")
    _, many = pages(reader("agent", catalogs), "catalogs")

    assert len(many) == 2 and max(many) <= one[0]  # a key's first page: its most


@pytest.mark.parametrize(
    ("path", "scope", "rows"),
    [("reviews?state=all", "curator", "reviews"), ("jobs", "curator", "jobs")],
)
def test_a_list_of_many_catalogs_never_reaches_the_one_beside_them(
    catalogs, path, scope, rows
):
    every = Catalog.objects.filter(slug__in=[*catalogs, OUTSIDE])
    if rows == "reviews":
        ToolReview.objects.bulk_create(
            ToolReview(
                catalog=c,
                tool_name="t",
                kind="new",
                state="withdrawn",
                proposed={"name": "t"},
                proposed_hash="0" * 64,
                diff_hash="0" * 64,
            )
            for c in every
        )
    else:
        Job.objects.bulk_create(
            Job(kind="import", catalog=c, state="succeeded") for c in every
        )

    found, queries = pages(reader(scope, catalogs), path)
    _, one = pages(reader(scope, [catalogs[0]]), path)

    assert sorted(item["catalog"] for item in found) == catalogs
    assert max(queries) <= one[0]
