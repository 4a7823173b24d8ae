"""The console's first steps: what a first-time admin does after signing in.

A panel on the tool list (where the console opens) names a few steps (try a
selection, connect an agent, add a source), each ticked from the real state of
the installation, never from a click; it goes away once every step is done, or
when the person dismisses it (kept per person: ``DismissedPanel``).

The steps belong to the apps that know them: each registers its own at start-up
(``AppConfig.ready``), so this module imports none of the apps above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.urls import reverse

from audit.actors import Caller
from catalog.models import DismissedPanel
from identity.access import access_for
from identity.models import ApiClient

if TYPE_CHECKING:
    from django.contrib.auth.models import User

PANEL = "first-steps"


@dataclass(frozen=True)
class FirstStep:
    """One step: its place in the list, what to do and where, and whether
    ``done(user)`` finds it done in the installation's state."""

    order: int
    key: str
    title: str
    text: str
    url: Callable[[Any], str]
    done: Callable[[Any], bool]


_STEPS: dict[str, FirstStep] = {}


def register_step(step: FirstStep) -> None:
    _STEPS[step.key] = step


def first_steps(user: Caller) -> list[dict[str, Any]] | None:
    """The steps as the panel shows them, or None when the panel is not for this
    person: not an admin, dismissed, or every step done."""
    if not access_for(user).is_admin:
        return None
    if DismissedPanel.objects.filter(user=user, panel=PANEL).exists():  # type: ignore[misc]
        return None
    steps = [
        {
            "key": step.key,
            "title": step.title,
            "text": step.text,
            "url": step.url(user),
            "done": step.done(user),
        }
        for step in sorted(_STEPS.values(), key=lambda s: s.order)
    ]
    return None if all(step["done"] for step in steps) else steps


def dismiss_first_steps(*, actor: User) -> None:
    """Hide the panel for this person for good (a preference: changes nothing
    anyone may see or do, so it is not an audit event)."""
    DismissedPanel.objects.get_or_create(user=actor, panel=PANEL)


register_step(
    FirstStep(
        order=20,
        key="agent",
        title="Connect an agent",
        text="Make an API key for it on API keys, then point the agent at "
        "/api/v1/select or /mcp with the key as a bearer token.",
        url=lambda user: reverse("identity:client-list"),
        done=lambda user: ApiClient.objects.filter(revoked=False).exists(),
    )
)
