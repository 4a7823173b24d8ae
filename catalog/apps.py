from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        # Every change to a person's access is audited, whatever wrote it.
        # The system checks report stored tool names that break the name rules.
        from catalog import access_changes, checks  # noqa: F401
