"""Selection's first step on the console (``catalog.first_steps``): try one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.urls import reverse

from audit.choices import EventType
from audit.models import AuditEvent
from catalog.first_steps import FirstStep, register_step

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def _selected(user: User) -> bool:
    """This person asked for a selection (Try it, or the API signed in)."""
    return AuditEvent.objects.filter(
        event_type=EventType.SELECTION, actor=user
    ).exists()


def register() -> None:
    register_step(
        FirstStep(
            order=10,
            key="select",
            title="Try a selection",
            text="Ask for tools the way an agent would, e.g. “email the quarterly "
            "report to Dana”, and see why each was picked or left out.",
            url=lambda user: reverse("selection:try-it"),
            done=_selected,
        )
    )
