"""Sources' first step on the console (``catalog.first_steps``): add one."""

from __future__ import annotations

from django.urls import reverse

from audit.actors import Caller
from catalog.first_steps import FirstStep, register_step
from catalog.models import Catalog
from sources.models import Source

# make run's demo server (the add_demo_source command) does not count.
DEMO_SOURCE = "demo"


def _where(user: Caller) -> str:
    catalog = Catalog.objects.visible_to(user).order_by("slug").first()
    if catalog is None:
        return reverse("console:catalog-list")
    return reverse("sources:source-list", args=[catalog.slug])


def register() -> None:
    register_step(
        FirstStep(
            order=30,
            key="source",
            title="Add a source",
            text="Put your own MCP server behind a catalog: its tools are synced "
            "in, and their calls run through Quiver (make run's demo server "
            "already runs the demo's weather, email and file tools).",
            url=_where,
            done=lambda user: Source.objects.exclude(name=DEMO_SOURCE).exists(),
        )
    )
