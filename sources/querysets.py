"""Reading sources within access: the lookup the console pages and the vault use
beside catalog.owned's (admins only; a catalog the caller cannot see is a 404)."""

from __future__ import annotations

from audit.actors import Caller
from catalog.owned import get_owned_for_user
from sources.models import Source


def get_source_for_user(user: Caller, source_id: int | str) -> Source:
    """One source: 404 unless its catalog is visible, 403 for a caller who sees
    it but does not manage sources (admins only)."""
    return get_owned_for_user(Source, user, source_id)
