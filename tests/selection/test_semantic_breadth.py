"""How wide the HNSW search is: never under the pool, wider for large catalogs."""

from __future__ import annotations

from selection.adapters.pgvector import LARGE_CATALOG, ef_search_for


def test_a_catalog_sized_search_uses_the_configured_breadth(settings):
    settings.QUIVER_EF_SEARCH = 100
    assert ef_search_for(pool=50, tool_count=4_076) == 100


def test_the_breadth_is_never_below_the_pool(settings):
    settings.QUIVER_EF_SEARCH = 100
    assert ef_search_for(pool=300, tool_count=4_076) == 300


def test_a_large_catalog_searches_twice_as_wide(settings):
    settings.QUIVER_EF_SEARCH = 100
    assert ef_search_for(pool=50, tool_count=LARGE_CATALOG + 1) == 200
    assert ef_search_for(pool=50, tool_count=LARGE_CATALOG) == 100
