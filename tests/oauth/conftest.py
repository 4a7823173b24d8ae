"""OAuth tests in process: Django's test client on http://localhost (a loopback
host, as ``make run`` serves), so the issuer is http://localhost and the
resource http://localhost/mcp."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from django.test import Client

from audit.models import AuditEvent
from tests.factories import make_tool, make_user

ORIGIN = "http://localhost"
RESOURCE = f"{ORIGIN}/mcp"


def an_address() -> str:
    """A client address of its own: per-address limits never carry over."""
    return (
        f"10.{secrets.randbelow(250)}.{secrets.randbelow(250)}.{secrets.randbelow(250)}"
    )


@pytest.fixture
def web(db: None) -> Client:
    """A browser-less client on localhost (the token endpoint's callers)."""
    return Client(HTTP_HOST="localhost", REMOTE_ADDR=an_address())


@pytest.fixture
def alice(db: None) -> Any:
    """A person with the support role on every catalog, no unsafe tools."""
    return make_user("alice", groups=("support",))


@pytest.fixture
def as_alice(alice: Any) -> Client:
    browser = Client(HTTP_HOST="localhost", REMOTE_ADDR=an_address())
    browser.force_login(alice)
    return browser


@pytest.fixture
def tools(db: None) -> None:
    make_tool(name="get_weather", description="Current weather for a city.")
    make_tool(
        name="refund_order",
        description="Refund a customer's order.",
        allowed_roles=["support"],
    )
    make_tool(name="wipe_disk", description="Erase the whole disk.", safe=False)


def refusals() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(event_type="oauth_refused").order_by("id"))
