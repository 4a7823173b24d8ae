"""A source that asks each person for OAuth, as rows (no server behind it): for
the tests of what a caller is answered before anything reaches an upstream."""

from __future__ import annotations

from django.utils import timezone

from catalog.models import Catalog, Tool
from sources.models import Source, SourceStatus, SourceTool
from tests.factories import make_tool
from vault.models import Registration, SourceAuthorization

URL = "https://notes.example/mcp"


def make_personal_source(catalog: Catalog, name: str = "notes") -> Tool:
    """Source ``name`` at notes.example, waiting for people's authorization,
    with one read-only tool ``<name>.whoami``; the tool."""
    source = Source.objects.create(
        catalog=catalog, name=name, url=URL, status=SourceStatus.AUTHORIZE
    )
    SourceAuthorization.objects.create(
        source=source,
        resource=URL,
        resource_metadata_url="https://notes.example/.well-known/oauth-protected-resource/mcp",
        issuer="https://auth.notes.example",
        metadata={
            "issuer": "https://auth.notes.example",
            "authorization_endpoint": "https://auth.notes.example/authorize",
            "token_endpoint": "https://auth.notes.example/token",
        },
        registration=Registration.DYNAMIC,
        client_id="quiver-at-notes",
        discovered=timezone.now(),
    )
    tool = make_tool(
        catalog,
        f"{name}.whoami",
        description="Who the caller is at the notes server.",
        parameters={"type": "object", "properties": {}},
        annotations={"readOnlyHint": True},
    )
    SourceTool.objects.create(source=source, tool=tool, upstream_name="whoami")
    return tool
