"""The one seam that tells whose call this is: the person a caller acts for.

A signed-in person acts for themself; an API key bound to a person (and an
OAuth token acting as a person) acts for that person; a key bound to nobody,
the system and anonymous callers act for nobody. A person who is deactivated
acts for nobody: their tokens are never used.

Every use of a person's upstream token asks this, and only this. A key is
bound to a person by its ``person`` (an ``ApiClient`` without one, as every
key is until identity binds keys to people, acts for nobody: fail closed).
When identity answers this itself, this function is where it is asked."""

from __future__ import annotations

from typing import Any


def person_for(caller: Any) -> Any:
    """The person ``caller`` acts for, or None."""
    if caller is None or not getattr(caller, "is_authenticated", False):
        return None
    client = getattr(caller, "api_client", None)
    if client is None:
        return caller if caller.is_active else None
    person = getattr(client, "person", None)
    return person if person is not None and person.is_active else None
