"""Every write to people, their catalog limits and API keys goes through a
function of this package."""

from identity.services.clients import create_api_client

__all__ = ["create_api_client"]
