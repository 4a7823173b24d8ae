"""/metrics tells what a process keeps for its catalogs: its budget, what it
keeps by kind, how many snapshots, the evictions and the snapshots it built
(selection.adapters.kept)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from catalog.models import Catalog
from catalog.services.catalogs import create_catalog
from selection.adapters import snapshots
from selection.adapters.kept import MB, STORE
from selection.adapters.snapshots import KIND, get_snapshot
from tests.factories import make_tool

pytestmark = pytest.mark.django_db
TOKEN = "scrape-token-0123456789abcdef"


def samples(client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    found = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            labels = tuple(
                sorted((k, v) for k, v in sample.labels.items() if k != "pid")
            )
            found[(sample.name, labels)] = sample.value
    return found


def answered(slug: str) -> Catalog:
    catalog = create_catalog(slug, slug.title(), actor=None)
    for index in range(20):
        make_tool(catalog, f"{slug}_tool_{index}")
    catalog = Catalog.objects.get(pk=catalog.pk)
    get_snapshot(catalog)
    return catalog


def test_the_budget_what_is_kept_and_the_evictions_are_scraped(client, settings):
    settings.QUIVER_METRICS_TOKEN = TOKEN
    STORE.clear()
    snapshots.clear()
    first = answered("north")
    settings.QUIVER_MEMORY_BUDGET_MB = 1.5 * STORE.size((KIND, first.pk)) / MB
    before = samples(client)
    evicted = ("quiver_catalog_memory_evictions_total", (("kind", "snapshot"),))
    built = ("quiver_catalog_snapshot_builds_total", (("how", "built"),))
    second = answered("south")  # the first one goes
    after = samples(client)
    assert after[("quiver_catalog_memory_budget_bytes", ())] == STORE.budget()
    kept = after[("quiver_catalog_memory_resident_bytes", (("kind", "snapshot"),))]
    assert kept == STORE.size((KIND, second.pk)) > 0
    assert after[("quiver_catalog_snapshots_resident", ())] == 1
    assert after[evicted] - before[evicted] == 1
    assert after[built] - before[built] == 1
