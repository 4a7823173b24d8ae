"""The one seam that tells whose call this is: the person a caller acts for.

A signed-in person acts for themself; an API key bound to a person, and an
OAuth token acting as a person, act for that person; a key bound to nobody,
the system and anonymous callers act for nobody. A person who is deactivated
acts for nobody: their tokens are never used.

Every use of a person's upstream token asks this, and only this; identity
decides the answer (``identity.access.acting_person``)."""

from __future__ import annotations

from typing import Any

from audit.actors import Actor
from identity.access import acting_person


def person_for(caller: Actor) -> Any:
    """The person ``caller`` acts for, or None."""
    return acting_person(caller)
