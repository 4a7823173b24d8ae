"""Who asks and who did something, as access, change and audit records name it:
a person or an API client's service user, or None for the system."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

# The caller, as ``request.user`` is: a person, the service user of an API key or
# of an OAuth connection (``user.api_client``), or anonymous.
Caller: TypeAlias = "User | AnonymousUser"
# Who did something: a caller, or None for the system (tasks, commands).
Actor: TypeAlias = "Caller | None"


def actor_name(actor: Actor) -> str:
    """The one spelling of who did something, for change and audit records."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        return "system"
    return str(actor.get_username())


def stored_user(actor: Actor) -> Any:
    """The actor as a saved user for a foreign key, or None (system, anonymous)."""
    if actor is None or not getattr(actor, "pk", None):
        return None
    return actor
