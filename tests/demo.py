"""A stack set up like ``make run``'s demo, in a test's database: the demo catalog
and the admin account (``bootstrap``), the demo MCP server behind its tools (the
settings file ``make run`` writes, ``add_demo_source``, the first sync run here as
a worker runs it) and, when asked, its embeddings."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.db import connection

from catalog.models import Catalog
from config.devstack import BASE_DIR
from config.devstack_demo import demo_sources_file
from jobs.services import claim_job
from sources.models import Source
from sources.services import start_sync
from sources.sync import run_sync
from tests.factories import embed_now

PASSWORD = "pw-12345678"  # what tests.factories.make_user gives every persona


def load_demo_catalog(state_dir: Path, monkeypatch: Any) -> Catalog:
    """``bootstrap`` as ``make run`` runs it: the demo catalog and ``admin``
    (whose password is then the personas' own, to sign in with)."""
    from django.contrib.auth import get_user_model

    monkeypatch.setenv("QUIVER_STATE_DIR", str(state_dir))
    call_command("bootstrap", stdout=StringIO())
    admin = get_user_model().objects.get(username="admin")
    admin.set_password(PASSWORD)
    admin.save(update_fields=["password"])
    return Catalog.objects.get(slug="default")


def add_demo_source(state_dir: Path, settings: Any) -> str:
    """The settings file ``make run`` writes, then ``add_demo_source``: what it said."""
    env: dict[str, str] = {}
    demo_sources_file(state_dir, env, BASE_DIR)
    settings.QUIVER_SOURCES_FILE = env["QUIVER_SOURCES_FILE"]
    out = StringIO()
    call_command("add_demo_source", stdout=out)
    return out.getvalue()


def sync_demo_source() -> Any:
    """The demo source's queued first sync, run here as a worker would."""
    source = Source.objects.get(name="demo")
    claimed = claim_job(start_sync(source, actor=None).pk)
    assert claimed is not None
    return run_sync(claimed)


# (tool name, text hash) -> its vector, from the first embedding of the demo
# catalog in this process: the model gives the same vector for the same text, and
# embedding 179 tools again costs most of a test on a loaded machine.
_VECTORS: dict[tuple[str, str], Any] = {}


def embed_demo(catalog: Catalog) -> Catalog:
    """``embed_now`` of the demo catalog, the vectors of an earlier run in this
    process written back first (what a worker would compute for the same texts);
    tools not seen before are embedded by the model as usual."""
    from catalog.models import Tool, ToolEmbedding

    rows = [
        ToolEmbedding(
            tool=tool,
            catalog_id=catalog.pk,
            model_id=model,
            dimension=len(vector),
            text_hash=text_hash,
            embedding=vector,
        )
        for tool in Tool.objects.filter(catalog=catalog)
        for (name, text_hash), (model, vector) in _VECTORS.items()
        if name == tool.name
    ]
    ToolEmbedding.objects.bulk_create(rows, ignore_conflicts=True)
    with connection.cursor() as cursor:
        # In a test's transaction the rows' deferred foreign-key checks would
        # still be pending, and Postgres builds no index over such a table.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    embedded = embed_now(catalog)
    for row in ToolEmbedding.objects.filter(catalog_id=catalog.pk).select_related(
        "tool"
    ):
        _VECTORS[(row.tool.name, row.text_hash)] = (row.model_id, list(row.embedding))
    return embedded


def demo_stack(state_dir: Path, settings: Any, monkeypatch: Any) -> Catalog:
    """The demo catalog, embedded, with the demo source synced behind it."""
    catalog = load_demo_catalog(state_dir, monkeypatch)
    add_demo_source(state_dir, settings)
    sync_demo_source()
    return embed_demo(catalog)
