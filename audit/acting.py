"""Who an agent acted for, on every row it writes.

The app that knows (oauth/, from ``AppConfig.ready``) lends ``describe``: given
a row's actor it answers the person an agent acted for and through what (the
key or OAuth connection, the OAuth client, the token), or None for an actor
acting for nobody but itself (a person, an unbound key, the system). The audit
writers put that answer in the row's ``input`` under ``acting_for``, so it is
hashed and sealed with the row, whatever service wrote it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from audit.actors import Actor

ACTING_FOR = "acting_for"
Describe = Callable[[Actor], dict[str, Any] | None]
_describers: list[Describe] = []


def register_describer(describe: Describe) -> None:
    """Lend the audit the answer to "whom did this actor act for" (once)."""
    if describe not in _describers:
        _describers.append(describe)


def acting_for(actor: Actor) -> dict[str, Any] | None:
    """What the registered describer answers for ``actor``; None without one."""
    for describe in _describers:
        described = describe(actor)
        if described:
            return described
    return None


def with_acting_for(actor: Actor, input: dict[str, Any]) -> dict[str, Any]:
    """``input`` with ``acting_for`` added when the actor acted for a person."""
    described = acting_for(actor) if actor is not None else None
    if not described:
        return input
    return {**input, ACTING_FOR: described}
