from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        # Every change to a person's access is audited, whatever wrote it.
        # The system checks report stored tool names that break the name rules.
        # The first steps' registry names "Connect an agent" on import.
        from catalog import access_changes, checks, first_steps  # noqa: F401
