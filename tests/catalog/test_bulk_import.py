"""The bulk import path gives every item the outcome, and leaves the rows and
change records, that importing the items one by one does."""

from __future__ import annotations

from typing import Any

import pytest

from catalog.models import Catalog, Tool, ToolChange
from catalog.names import reclaim
from catalog.services.catalogs import create_catalog
from catalog.services.imports import run_import, start_import
from catalog.services.tools import content_hash, tool_to_spec
from jobs.models import Job
from jobs.services import claim_job
from tests.factories import make_tool, make_user, weather_schema

pytestmark = [pytest.mark.integration]

ROW_FIELDS = [
    "name",
    "provider_name",
    "description",
    "parameters",
    "category",
    "version",
    "content_hash",
    "prompt_tokens",
    "embedding_status",
    "created_by__username",
    "updated_by__username",
]


def seed(catalog: Catalog) -> None:
    make_tool(catalog, name="get_weather", description="Current weather.")
    make_tool(catalog, name="send_email", description="Send an email.")
    stored_before_the_name_rules("Held Tool", catalog, provider_name="held_name")
    stored_before_the_name_rules(
        "lookup user", catalog, provider_name="lookup_user", description="Find a user."
    )


def stored_before_the_name_rules(name: str, catalog: Catalog, **fields: Any) -> None:
    """A tool whose name the rules now refuse for a new tool (written past them)."""
    made = make_tool(catalog, name="legacy_" + name.replace(" ", "_"), **fields)
    made.name = name
    made.content_hash = content_hash(tool_to_spec(made))
    made.save(update_fields=["name", "content_hash"])
    reclaim(catalog.pk)  # its names held as the migration holds stored ones


def tool(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "parameters": weather_schema(), **fields}


def mixed_document() -> list[Any]:
    return [
        tool("create_ticket", description="Open a ticket."),  # new
        tool("get_weather", description="Weather now, changed."),  # changed
        tool("send_email", description="Send an email."),  # unchanged
        tool("bad\u202ename"),  # invalid name
        {"description": "no name"},  # unreadable item
        tool("create_ticket", description="Open a support ticket."),  # again
        tool("create_ticket", description="Open a support ticket."),  # same again
        tool("intruder", provider_name="held_name"),  # provider name taken
        tool("lookup.user"),  # derived provider name collides: lookup_user_2
        tool("lookup_user"),  # the provider name of "lookup user": refused
        tool("Held Tool", provider_name="freed_name"),  # gives held_name up
        tool("newcomer", provider_name="held_name"),  # which is now free
        tool("long_category", category="c" * 150),  # refused by full_clean
        tool("bad_schema", parameters={"type": "object", "properties": []}),
        tool("get_weather", description="Weather now, changed."),  # unchanged now
    ]


def import_into(slug: str, document: list[Any], settings, chunk: int) -> Job:
    settings.QUIVER_IMPORT_CHUNK = chunk
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    catalog = Catalog.objects.get(slug=slug)
    job = start_import(catalog, document, "canonical", actor=make_user(f"{slug}-u"))
    return run_import(claimed(job.pk))


def claimed(job_id: int) -> Job:
    job = claim_job(job_id)
    assert job is not None
    return job


def rows(slug: str) -> list[dict[str, Any]]:
    found = Tool.objects.filter(catalog__slug=slug).order_by("id")
    # Each catalog is imported by its own user: compare whether a user is set.
    return [
        {k: bool(v) if k.endswith("username") else v for k, v in row.items()}
        for row in found.values(*ROW_FIELDS)
    ]


def changes(slug: str) -> list[tuple[Any, ...]]:
    found = ToolChange.objects.filter(catalog__slug=slug).order_by("id")
    return [
        (c.tool_name, c.tool and c.tool.name, c.action, c.version, c.before, c.after)
        + (c.actor_name.removeprefix(slug),)
        for c in found.select_related("tool")
    ]


def audited(slug: str) -> int:
    """Tool changes of the catalog in the audit chain: one per change record."""
    from audit.models import AuditEvent

    return AuditEvent.objects.filter(
        event_type="tool_changed", catalog_slug=slug
    ).count()


def test_a_mixed_document_gives_the_outcomes_rows_and_changes_of_one_by_one(
    transactional_db, purged_broker, settings
):
    for slug in ("one-by-one", "bulk"):
        seed(create_catalog(slug, slug))
    single = import_into("one-by-one", mixed_document(), settings, chunk=0)
    bulk = import_into("bulk", mixed_document(), settings, chunk=4)
    assert bulk.items == single.items
    assert bulk.counts == single.counts
    assert bulk.counts == {"created": 3, "updated": 3, "unchanged": 3} | {"rejected": 6}
    assert rows("bulk") == rows("one-by-one")
    assert changes("bulk") == changes("one-by-one")
    assert audited("bulk") == audited("one-by-one") == changes("bulk").__len__()
    bulk_tools = Tool.objects.filter(catalog__slug="bulk")
    providers = dict(bulk_tools.values_list("name", "provider_name"))
    assert providers["lookup.user"] == "lookup_user_2"
    assert "lookup_user" not in providers  # one name, one tool
    [refused] = [item for item in bulk.items if item["name"] == "lookup_user"]
    assert "is the provider name of tool 'lookup user'" in refused["reason"]
    assert providers["newcomer"] == "held_name"
    versions = Catalog.objects.filter(slug__in=["bulk", "one-by-one"])
    assert len(set(versions.values_list("version", flat=True))) == 1


def test_provider_names_swapped_inside_a_chunk_fall_back_to_one_by_one(
    transactional_db, purged_broker, settings
):
    for slug in ("one-by-one", "bulk"):
        catalog = create_catalog(slug, slug)
        make_tool(catalog, name="first", provider_name="p")
        make_tool(catalog, name="second", provider_name="q")
    document = [
        tool("first", provider_name="r"),
        tool("second", provider_name="p"),
        tool("first", provider_name="q"),
    ]
    single = import_into("one-by-one", document, settings, chunk=0)
    bulk = import_into("bulk", document, settings, chunk=10)
    assert bulk.items == single.items
    assert bulk.counts["updated"] == 3
    assert rows("bulk") == rows("one-by-one")
    assert changes("bulk") == changes("one-by-one")


def test_a_chunk_costs_the_same_few_queries_whatever_its_size(
    transactional_db, purged_broker, settings, django_assert_max_num_queries
):
    create_catalog("bulk", "bulk")
    document = [tool(f"tool_{i}", description=f"Tool {i}.") for i in range(200)]
    # 31: the 30 of the writes, and one read of the catalog's tools for the
    # screening rules that compare a definition with the others (holds.Screen).
    with django_assert_max_num_queries(31):
        job = import_into("bulk", document, settings, chunk=250)
    assert job.counts["created"] == 200
    assert ToolChange.objects.filter(action="create").count() == 200


def test_an_interrupted_import_resumes_after_the_last_committed_chunk(
    transactional_db, purged_broker, settings
):
    settings.QUIVER_IMPORT_CHUNK = 3
    settings.QUIVER_IMPORT_EMBED_LAG = 0
    catalog = create_catalog("bulk", "bulk")
    document = [tool(f"tool_{i}") for i in range(8)]
    job = start_import(catalog, document, "canonical", actor=None)

    class WorkerDied(Exception):
        pass

    def die(job: Job) -> None:
        raise WorkerDied

    with pytest.raises(WorkerDied):
        run_import(claimed(job.pk), die)
    saved = Job.objects.get(pk=job.pk)
    assert [entry["index"] for entry in saved.items] == [0, 1, 2]
    assert Tool.objects.count() == 3
    Job.objects.filter(pk=job.pk).update(state="queued")
    done = run_import(claimed(job.pk))
    assert [entry["index"] for entry in done.items] == list(range(8))
    assert done.counts["created"] == 8
    assert ToolChange.objects.count() == 8
