"""A tool is selectable as soon as its import ends, by its words, before any vector
of it exists; its meaning joins the ranking once the worker has embedded it."""

from __future__ import annotations

from typing import Any

import pytest

from catalog.models import Catalog, Tool, ToolEmbedding
from catalog.services.embeddings import embed_pending_batch
from catalog.services.imports import run_import, start_import
from jobs.services import claim_job
from tests.factories import make_sample_catalog

pytestmark = pytest.mark.django_db

QUERY = "when is high tide at the harbour tomorrow?"
NEW_TOOLS = [
    {
        "name": "tide_table_lookup",
        "description": "High and low tide times for a harbour on a given day.",
        "parameters": {
            "type": "object",
            "properties": {"harbour": {"type": "string"}},
            "required": ["harbour"],
        },
    },
    *(
        {"name": f"inventory_tool_{i}", "description": f"Count stock in bin {i}."}
        | {"parameters": {"type": "object", "properties": {}}}
        for i in range(20)
    ),
]


@pytest.fixture
def agent(with_key: Any) -> Any:
    return with_key("agent", roles=["support"])


def import_new_tools(catalog: Catalog, settings: Any) -> None:
    """The bulk path, run here; no worker runs, so no tool gets a vector."""
    settings.QUIVER_IMPORT_CHUNK = 250
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    job = start_import(catalog, NEW_TOOLS, "canonical", actor=None)
    claimed = claim_job(job.pk)
    assert claimed is not None
    assert run_import(claimed).counts["created"] == len(NEW_TOOLS)


def select(agent: Any, **body: Any) -> dict[str, Any]:
    response = agent.post("/api/v1/select", {"query": QUERY, **body}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def test_an_imported_tool_is_selected_by_its_words_before_its_vector_exists(
    agent, settings
):
    catalog = make_sample_catalog()  # embedded: semantic ranking is on
    select(agent)  # the snapshot of the catalog before the import is cached
    import_new_tools(catalog, settings)
    tide = Tool.objects.get(catalog=catalog, name="tide_table_lookup")
    assert tide.embedding_status == "pending"
    assert not ToolEmbedding.objects.filter(tool=tide).exists()
    body = select(agent, explain=True)
    assert body["tools"][0]["name"] == "tide_table_lookup"
    assert body["stats"]["considered"] == Tool.objects.filter(catalog=catalog).count()


def test_its_meaning_joins_the_ranking_once_it_is_embedded(agent, settings):
    catalog = make_sample_catalog()
    import_new_tools(catalog, settings)
    before = select(agent, scorer="embedding")
    assert "tide_table_lookup" not in [t["name"] for t in before["tools"]]
    tide = Tool.objects.get(catalog=catalog, name="tide_table_lookup")
    embed_pending_batch(tide.pk, 64)  # what the worker's embed_tool task does
    after = select(agent, scorer="embedding")
    assert after["tools"][0]["name"] == "tide_table_lookup"
