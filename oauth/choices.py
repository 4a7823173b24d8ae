"""Enumerations and fixed names of OAuth at Quiver."""

from django.db import models

# What a token may be used for: /mcp, and the REST API as the same agent.
SCOPE_MCP = "mcp"
SCOPE_API = "api"
ENDPOINT_SCOPES = (SCOPE_MCP, SCOPE_API)
# A client may ask for part of a person's access by scope; the consent page
# starts from what it asked, and a person never grants more than they hold.
CATALOG_PREFIX = "catalog:"
ROLE_PREFIX = "role:"
SCOPE_UNSAFE = "unsafe"


class ClientKind(models.TextChoices):
    DYNAMIC = "dynamic", "Registered (RFC 7591)"
    DOCUMENT = "document", "Client ID metadata document"
    EXTERNAL = "external", "Of the company's authorization server"


class Refusal(models.TextChoices):
    """Why an OAuth request or token was refused, as the audit row says it."""

    INVALID_TOKEN = "invalid_token", "Token invalid, expired or revoked"
    INSUFFICIENT_SCOPE = "insufficient_scope", "Token lacks the scope"
    INVALID_GRANT = "invalid_grant", "Code or refresh token refused"
    INVALID_TARGET = "invalid_target", "Resource is not this server's"
    INVALID_SCOPE = "invalid_scope", "Scope beyond what the person holds"
    INVALID_REQUEST = "invalid_request", "Authorization request refused"
