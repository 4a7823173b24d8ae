"""quiver_client.langgraph's retrieval against a live server, in Quiver's venv
(no LangChain here: the module needs none until tool_registry). The registry and
a whole bigtool agent run in the frameworks' venv (tests/frameworks)."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import pytest
from quiver_client import AsyncQuiver, Quiver
from quiver_client.langgraph import aretrieve_tools, retrieve_tools

from audit.models import AuditEvent
from tests.aio import run_async
from tests.client.conftest import DOTTED_NAME

pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_retrieval_answers_catalog_names_and_remembers_the_selection_of_each(
    live_quiver,
):
    offered: dict[str, str] = {}
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        retrieve = retrieve_tools(quiver, limit=2, offered=offered)
        names = retrieve("export an invoice of the billing system as a PDF")
    assert names[0] == DOTTED_NAME  # the catalog's name, not billing_invoice_export
    assert len(names) <= 2
    [selection] = AuditEvent.objects.filter(event_type="selection")
    assert offered == dict.fromkeys(names, str(selection.selection_id))
    assert selection.input["channel"] == "api"


def test_the_async_retrieval_passes_selects_options(live_quiver):
    offered: dict[str, str] = {}

    async def main() -> list[str]:
        async with AsyncQuiver(live_quiver.url, live_quiver.key) as quiver:
            retrieve = aretrieve_tools(
                quiver, limit=1, offered=offered, categories=["nothing-here"]
            )
            return await retrieve("what is the weather in Paris")

    assert run_async(main()) == []
    assert offered == {}


def test_the_retrieval_is_a_function_bigtool_can_make_a_tool_of(live_quiver):
    """StructuredTool.from_function reads the name, the docstring and the
    annotations: the model sees ``retrieve_tools(query: str)``."""
    with Quiver(live_quiver.url, live_quiver.key) as quiver:
        retrieve = retrieve_tools(quiver)
    assert retrieve.__name__ == "retrieve_tools"
    assert retrieve.__doc__ and "search query" in retrieve.__doc__
    hints = typing.get_type_hints(retrieve)
    assert hints == {"query": str, "return": list[str]}


def test_importing_the_module_loads_no_langchain():
    probe = (
        "import sys, quiver_client.langgraph; "
        "print(sorted(m for m in sys.modules if m.startswith('lang')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=EXAMPLES,  # not the project root: no local packages
        check=True,
    )
    assert done.stdout.strip() == "[]"
