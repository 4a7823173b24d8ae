"""Factory functions for tests: small, explicit, with sensible defaults."""

from __future__ import annotations

from itertools import count
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from catalog.models import Catalog, Tool
from catalog.names import reclaim
from catalog.services import create_tool, ensure_default_catalog
from catalog.services.embeddings import run_reindex, start_reindex
from catalog.services.tools import content_hash, tool_to_spec
from catalog.spec import ToolSpec
from identity.services import create_api_client
from jobs.services import claim_job

_seq = count(1)


def weather_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The name of the city"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    }


def make_spec(name: str | None = None, **fields: Any) -> ToolSpec:
    name = name or f"tool_{next(_seq)}"
    fields.setdefault("description", f"Does the {name.replace('_', ' ')} thing.")
    fields.setdefault("parameters", weather_schema())
    return ToolSpec(name=name, **fields)


def make_tool(
    catalog: Catalog | None = None, name: str | None = None, **fields: Any
) -> Tool:
    catalog = catalog or ensure_default_catalog()
    return create_tool(catalog, make_spec(name, **fields), actor=None)


def stored_past_the_rules(tool: Tool, **fields: Any) -> Tool:
    """``tool`` with ``fields`` written past the services, as data stored before
    a rule was (a name new tools may not take, two tools' look-alike names), and
    the catalog's names held again as the migration held stored ones."""
    Tool.objects.filter(pk=tool.pk).update(**fields)
    tool.refresh_from_db()
    tool.content_hash = content_hash(tool_to_spec(tool))
    tool.save(update_fields=["content_hash"])
    reclaim(tool.catalog_id)
    return tool


def make_user(
    username: str, *, groups: tuple[str, ...] = (), superuser: bool = False
) -> Any:
    users = get_user_model().objects
    if superuser:
        return users.create_superuser(
            username, f"{username}@example.com", "pw-12345678"
        )
    user = users.create_user(username, f"{username}@example.com", "pw-12345678")
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


def make_client_key(name: str, scope: str, **options: Any) -> str:
    """A key made by the system; every catalog ("*") unless ``catalogs`` is given."""
    options.setdefault("catalogs", "*")
    _client, key = create_api_client(name, scope, **options)
    return key


def embed_now(catalog: Catalog) -> Catalog:
    """Embed the catalog in this process with the real model, as a worker would."""
    job = start_reindex(catalog, enqueue=False)
    claimed = claim_job(job.pk)
    assert claimed is not None
    run_reindex(claimed)
    catalog.refresh_from_db()
    return catalog


SAMPLE_TOOLS: dict[str, dict[str, Any]] = {
    "get_weather": {
        "description": "Current weather and temperature for a city.",
        "tags": ["weather"],
    },
    "send_email": {
        "description": "Send an email message to a recipient.",
        "tags": ["email"],
        "keywords": ["mail", "inbox"],
        "requires_approval": True,
    },
    "delete_repository": {
        "description": "Permanently delete a code repository.",
        "safe": False,
        "risk_level": "critical",
    },
    "refund_payment": {
        "description": "Refund a customer's card payment.",
        "allowed_roles": ["finance"],
    },
    "create_calendar_event": {"description": "Create a meeting on the calendar."},
    "tail_logs": {
        "description": "Stream the logs of a service.",
        "capabilities": ["streaming"],
    },
}


def make_sample_catalog(*names: str) -> Catalog:
    """The default catalog with the named sample tools (all by default), embedded
    with the real model."""
    catalog = ensure_default_catalog()
    for name in names or tuple(SAMPLE_TOOLS):
        make_tool(catalog, name, **SAMPLE_TOOLS[name])
    return embed_now(catalog)
