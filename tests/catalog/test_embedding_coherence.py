"""The worker embeds a tool of pasted requests without its description, and
embeds it again when the description is edited. Real Postgres and MiniLM."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from catalog.embedding_text import embedding_key, embedding_text
from catalog.models import ToolEmbedding
from catalog.services.embeddings import current_backend, embed_tools
from catalog.services.tools import tool_to_spec, update_tool
from tests.catalog.test_coherence import HONEST, MIRROR
from tests.factories import make_tool

pytestmark = [pytest.mark.integration]


def stored_vector(tool_id: int) -> np.ndarray:
    return np.asarray(ToolEmbedding.objects.get(tool_id=tool_id).embedding)


def embedded_as(text: str) -> np.ndarray:
    return current_backend().embed_documents([text])[0]


def test_a_tool_of_pasted_requests_is_embedded_without_its_description(
    transactional_db, purged_broker
):
    tool = make_tool(name="assistant", description=MIRROR)
    assert embed_tools([tool.pk])["embedded"] == 1
    spec = tool_to_spec(tool)
    model = current_backend().model_id
    row = ToolEmbedding.objects.get(tool=tool)
    assert row.text_hash == embedding_key(spec, model, dispersed=True)
    without = embedding_text(spec, dispersed=True)
    assert np.allclose(stored_vector(tool.pk), embedded_as(without), atol=1e-4)
    assert embed_tools([tool.pk]) == {"embedded": 0, "unchanged": 1, "skipped": 0}


def test_editing_a_left_out_description_into_an_honest_one_embeds_it(
    transactional_db, purged_broker
):
    tool = make_tool(name="send_email", description=MIRROR)
    embed_tools([tool.pk])
    spec = replace(tool_to_spec(tool), description=HONEST)
    update_tool(tool, spec, actor=None)
    assert embed_tools([tool.pk])["embedded"] == 1
    with_it = embedding_text(spec)
    assert "Attachments" in with_it
    assert np.allclose(stored_vector(tool.pk), embedded_as(with_it), atol=1e-4)
