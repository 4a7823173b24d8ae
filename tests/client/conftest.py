"""A live Quiver (Django's live server on a real database) for the client's tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from catalog.services import ensure_default_catalog
from tests.factories import make_client_key, make_sample_catalog, make_tool

# Not provider-safe: providers see it as billing_invoice_export.
DOTTED_NAME = "billing.invoice.export"


@dataclass
class LiveQuiver:
    url: str
    key: str


@pytest.fixture
def live_quiver(live_server: Any) -> LiveQuiver:
    """The sample catalog plus a tool whose name is not provider-safe, embedded;
    an agent key with neither the finance role nor unsafe tools."""
    make_tool(
        ensure_default_catalog(),
        DOTTED_NAME,
        description="Export an invoice of the billing system as a PDF file.",
    )
    make_sample_catalog()
    return LiveQuiver(live_server.url, make_client_key("agent-x", "agent"))
