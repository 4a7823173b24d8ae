from django.apps import AppConfig


class VaultConfig(AppConfig):
    """People's own authorizations to the sources that ask each person for
    OAuth: discovery, connecting, the token vault and calls made as the person."""

    name = "vault"
    verbose_name = "Token vault"

    def ready(self) -> None:
        from sources import accounts
        from vault import signals  # noqa: F401 - tokens go with their person
        from vault.personal import VaultAuthorization

        accounts.lend(VaultAuthorization())
