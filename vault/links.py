"""Where a person connects their account: the link a call that needs it answers."""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse

from sources.models import Source


def connect_url(source: Source) -> str:
    """The person's "My connections" page with ``source`` picked out: absolute
    on ``QUIVER_PUBLIC_URL`` when it is set, else a path the answering view
    makes absolute on the address the caller reached."""
    path = reverse("vault:connection-list") + f"?source={source.pk}"
    public = str(settings.QUIVER_PUBLIC_URL or "").rstrip("/")
    return public + path if public else path
