"""OpenAPI description of our bearer credentials (drf-spectacular needs to be
told): an API key, or an OAuth access token (the API's authentication,
``oauth.auth.BearerAuthentication``, takes both)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "identity.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API client key: `Authorization: Bearer qv_...`",
        }


class BearerScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "oauth.auth.BearerAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API client key (`Authorization: Bearer qv_...`), "
            "or an OAuth access token whose scope names `api`",
        }
