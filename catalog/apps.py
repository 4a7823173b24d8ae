from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        # The system checks report stored tool names that break the name rules.
        from catalog import checks  # noqa: F401
        from catalog.models import Catalog
        from catalog.services import work
        from identity.catalogs import register_catalog_names

        register_catalog_names(Catalog.objects.slugs_among)
        work.register()
