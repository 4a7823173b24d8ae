from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        # Every change to a person's access is audited, whatever wrote it.
        from catalog import access_changes  # noqa: F401
        from catalog import checks  # noqa: F401  (registers the system checks)
