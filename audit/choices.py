from django.db import models


class EventType(models.TextChoices):
    SELECTION = "selection", "Selection"
    VALIDATION = "validation", "Tool-call validation"
    SETTINGS = "settings", "Selection settings change"
    CLIENT_CREATED = "client_created", "API key created"
    CLIENT_REVOKED = "client_revoked", "API key revoked"
    CLIENT_ROTATED = "client_rotated", "API key rotated"
    CLIENT_CHANGED = "client_changed", "API key changed"
    CATALOG_CREATED = "catalog_created", "Catalog created"
    TOOL_CHANGED = "tool_changed", "Tool created, changed or deleted"
    ACCESS_CHANGED = "access_changed", "A person's groups or catalogs changed"
    KEY_ROTATED = "key_rotated", "Audit key rotated"
    QUERY_ENCODER = "query_encoder", "Static query encoder built"


class RollupKind(models.TextChoices):
    OFFERED = "offered", "Tool offered"
    EXCLUDED = "excluded", "Tool left out"
    RULE = "rule", "Rule that left a tool out"
