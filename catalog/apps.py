from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        # Every change to a person's access is audited, whatever wrote it.
        # The system checks report stored tool names that break the name rules.
        from catalog import access_changes, checks  # noqa: F401
        from catalog.embeddings.static import REFRESHERS
        from catalog.query_encoder_store import refresh

        # With QUIVER_QUERY_ENCODER_STORE=postgres, the newest encoder is copied
        # from the database into this process's state directory before use.
        if refresh not in REFRESHERS:
            REFRESHERS.append(refresh)
