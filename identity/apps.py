from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"
    verbose_name = "Identity and access"

    def ready(self) -> None:
        # Every change to a person's access is audited, whatever wrote it.
        from identity import access_changes  # noqa: F401
