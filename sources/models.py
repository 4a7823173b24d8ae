"""A source is an MCP server a catalog takes tools from; each tool it brought keeps
its upstream name (for calls) and the upstream definition last synced (for diffs)."""

from __future__ import annotations

from django.db import models

from catalog.models import Tool
from catalog.owned import CatalogOwned, owning_catalog
from identity.access import Access


class SourceKind(models.TextChoices):
    MCP = "mcp", "MCP server (streamable HTTP)"
    # A command named in the server's settings file (sources.stdio), never the API.
    STDIO = "stdio", "MCP server (stdio command from the settings file)"


class SourceStatus(models.TextChoices):
    NEW = "new", "Never synced"
    SYNCING = "syncing", "Syncing"
    OK = "ok", "OK"
    ERROR = "error", "Error"
    # The server asks each person for OAuth: nobody has connected an account yet.
    AUTHORIZE = "authorize", "Waiting for a person's authorization"


class Source(CatalogOwned):
    """An MCP server a catalog syncs its tools from (admins only). Its name is
    also the namespace of its tools' catalog names, so two sources cannot collide."""

    catalog = owning_catalog("sources")
    kind = models.CharField(max_length=10, choices=SourceKind.choices, default="mcp")
    # A stdio source has none: its command is the settings file's.
    url = models.URLField(max_length=2000, blank=True)
    # The header values are secrets: stored encrypted, never shown back in clear.
    headers_encrypted = models.TextField(blank=True, default="")
    # A stdio command is configured in the server's settings file only, under this name.
    stdio_name = models.CharField(max_length=64, blank=True, default="")
    timeout_seconds = models.FloatField(default=30.0)
    max_result_bytes = models.PositiveIntegerField(default=100_000)
    status = models.CharField(
        max_length=10, choices=SourceStatus.choices, default=SourceStatus.NEW
    )
    last_synced = models.DateTimeField(null=True, blank=True)
    # When a sync last succeeded (last_synced also counts failures): the metrics'
    # quiver_source_last_success_timestamp_seconds, for "no good sync in N hours".
    last_success = models.DateTimeField(null=True, blank=True)
    last_outcome = models.CharField(max_length=200, blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    tool_count = models.PositiveIntegerField(default=0)
    secret_fields = ("headers_encrypted",)

    @staticmethod
    def managed_by(access: Access) -> bool:
        return access.manages_sources


class SourceTool(models.Model):
    """The link between a catalog tool and the upstream tool it came from."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="links")
    tool = models.OneToOneField(
        Tool, on_delete=models.CASCADE, related_name="source_link"
    )
    upstream_name = models.CharField(max_length=200)
    # The upstream Tool object as last listed (inputSchema, outputSchema, annotations).
    upstream = models.JSONField(default=dict)
    upstream_hash = models.CharField(max_length=64, blank=True, default="")
    # Gone upstream: no longer offered, kept for audit.
    gone = models.BooleanField(default=False)
    synced = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "upstream_name"], name="source_tool_unique_upstream"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source} {self.upstream_name}"
