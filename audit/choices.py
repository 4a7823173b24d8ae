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
    SOURCE_CHANGED = "source_changed", "Catalog source added, changed or removed"
    TOOL_CALL = "tool_call", "Tool call through Quiver"
    APPROVAL = "approval", "Tool call approval requested, decided or expired"
    LABELS_CHANGED = "labels_changed", "Labelled requests changed"
    MCP_REFUSED = "mcp_refused", "Request refused at /mcp"
    TOOL_REVIEW = (
        "tool_review",
        "Tool definition held, approved, allowed, refused or withdrawn",
    )
    WEBHOOK_CHANGED = (
        "webhook_changed",
        "Webhook added, changed, rotated, removed or replayed",
    )
    SIGN_IN = "sign_in", "Person signed in"
    SIGN_IN_REFUSED = "sign_in_refused", "Sign-in refused"
    SIGN_OUT = "sign_out", "Person signed out"
    SIGN_IN_SETTINGS = (
        "sign_in_settings",
        "Single sign-on mapping or password sign-in changed",
    )
    OAUTH_CLIENT = "oauth_client", "OAuth client registered"
    OAUTH_CONSENT = "oauth_consent", "OAuth client approved or denied by a person"
    OAUTH_TOKEN = "oauth_token", "OAuth tokens issued for an approval"
    OAUTH_REVOKED = "oauth_revoked", "OAuth connection or token revoked"
    OAUTH_REFUSED = "oauth_refused", "OAuth request or token refused"
    UPSTREAM_AUTH = (
        "upstream_auth",
        "A person's authorization of an upstream server connected, refused or removed",
    )


class RollupKind(models.TextChoices):
    OFFERED = "offered", "Tool offered"
    EXCLUDED = "excluded", "Tool left out"
    RULE = "rule", "Rule that left a tool out"


# A ``tool_call`` event's ``output.outcome`` (the call path, calls/services.py):
# how an attempt ended. A call that reached for its upstream also has a first
# event, ``started`` (calls/records.py), which is not an outcome.
CALL_OUTCOMES = (
    "ran",
    "refused",
    "pending",
    "denied",
    "needs_authorization",
    "failed",
    "timed_out",
    "interrupted",
)
CALL_STARTED = "started"
