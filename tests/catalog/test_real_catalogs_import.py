"""The three benchmark catalogs (shared/bench/data, beside the clone) import whole:
every tool of each file arrives, under its own name or, for the names outside the
rule, a safe one with the file's kept as its original name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench._data import DATA_DIR
from catalog.models import Tool
from catalog.services import create_catalog
from catalog.services.imports import run_import, start_import
from jobs.services import claim_job

pytestmark = [pytest.mark.integration]

# What each file calls its tools, and the names that break the rule.
RENAMED = {
    "metatool": {"PDF&URLTool": "PDF_URLTool"},
    "sealtools": {"requestFirst Aid Assistance": "requestFirst_Aid_Assistance"},
    "stabletoolbench": {},
}


def canonical(row: dict[str, Any]) -> dict[str, Any]:
    """A data set's tool as Quiver JSON (MetaTool's have no schema: read-only)."""
    item: dict[str, Any] = {
        "name": row["name"],
        "title": row.get("name_for_human") or "",
        "description": row.get("description") or "",
        "parameters": row.get("parameters"),
        "category": row.get("category") or "",
        "tags": row.get("tags") or [],
    }
    if item["parameters"] is None:
        item |= {"allow_no_schema": True, "no_schema_mode": "read-only"}
    return item


def rows(name: str) -> list[dict[str, Any]]:
    path: Path = DATA_DIR / name / "tools.jsonl"
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.mark.parametrize("data_set", sorted(RENAMED))
def test_each_benchmark_catalog_imports_whole(
    transactional_db, purged_broker, settings, data_set
):
    settings.QUIVER_IMPORT_CHUNK = 250
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    document = [canonical(row) for row in rows(data_set)]
    catalog = create_catalog(data_set, data_set)
    job = start_import(catalog, document, "canonical", actor=None, names="rename")
    claimed = claim_job(job.pk)
    assert claimed is not None
    job = run_import(claimed)
    assert job.counts["created"] == len(document), [
        entry for entry in job.items if entry["outcome"] != "created"
    ][:5]
    stored = dict(
        Tool.objects.filter(catalog=catalog).values_list("name", "original_name")
    )
    assert len(stored) == len(document)
    expected = RENAMED[data_set]
    kept = {item["name"] for item in document} - set(expected)
    assert kept <= set(stored)
    assert {stored[new]: new for new in expected.values()} == expected
    renamed = {e["renamed_from"]: e["name"] for e in job.items if "renamed_from" in e}
    assert renamed == expected
