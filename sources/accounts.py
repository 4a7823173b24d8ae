"""Sources whose server asks each person for OAuth: what the sync needs from the
app that keeps people's authorizations (the vault), lent at start-up.

Sources sits below that app, so it never imports it: the vault registers one
``PersonalAuthorization`` in its ``AppConfig.ready``. Until it has, asking fails
loudly (``ImproperlyConfigured``): a source that asks for OAuth is never taken
for one with shared headers."""

from __future__ import annotations

from typing import Protocol

from django.core.exceptions import ImproperlyConfigured

from sources.models import Source


class NoAccount(Exception):
    """No person has connected an account the sync could use; the message says
    what the source waits for."""


class PersonalAuthorization(Protocol):
    def is_personal(self, source: Source) -> bool:
        """Whether calls to ``source`` run as each person (it asked for OAuth)."""
        ...

    def challenged(self, source: Source, challenge: str) -> str:
        """``source`` answered 401 with this ``WWW-Authenticate`` challenge:
        discover its authorization server and register Quiver there. Returns
        what the source now waits for; raises ``ValueError`` naming why the
        challenge cannot be followed."""
        ...

    def sync_headers(self, source: Source) -> dict[str, str]:
        """The headers of the account a sync of ``source`` runs as (the first
        connected person's token); ``NoAccount`` when nobody connected."""
        ...


_lent: list[PersonalAuthorization] = []


def lend(authorization: PersonalAuthorization) -> None:
    """Register the vault's answers (once, however often asked)."""
    _lent[:] = [authorization]


def lent() -> PersonalAuthorization:
    """The vault's answers; ``ImproperlyConfigured`` before it lent them."""
    if not _lent:
        raise ImproperlyConfigured(
            "sources.accounts: no app lent people's authorizations (the vault)"
        )
    return _lent[0]


def is_personal(source: Source) -> bool:
    return lent().is_personal(source)
