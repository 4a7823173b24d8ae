"""What sources asks of the vault (``sources.accounts``), lent at start-up."""

from __future__ import annotations

from sources.accounts import NoAccount
from sources.models import Source
from vault.discovery import DiscoveryFailed
from vault.models import SourceAuthorization
from vault.registration import RegistrationFailed
from vault.services import authorizations, tokens


class VaultAuthorization:
    """Sources that ask each person for OAuth, as the vault knows them."""

    def is_personal(self, source: Source) -> bool:
        return tokens.is_personal(source)

    def challenged(self, source: Source, challenge: str) -> str:
        try:
            return authorizations.follow_challenge(source, challenge)
        except (DiscoveryFailed, RegistrationFailed) as exc:
            raise ValueError(str(exc)) from exc

    def sync_headers(self, source: Source) -> dict[str, str]:
        headers = tokens.sync_headers(source)
        if headers is not None:
            return headers
        auth = SourceAuthorization.objects.filter(source=source).first()
        if auth is None:
            raise NoAccount("authorization: the source's authorization is unknown")
        raise NoAccount(authorizations.waiting_for(auth))
