from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog"

    def ready(self) -> None:
        # The system checks report stored tool names that break the name rules;
        # the first steps' registry names "Connect an agent" on import.
        from catalog import checks, first_steps  # noqa: F401
        from catalog.models import Catalog
        from catalog.query_encoder_store import refresh
        from catalog.services import work
        from embeddings.static import REFRESHERS
        from identity.catalogs import register_catalog_names
        from telemetry.health import register_embedding_backlog

        register_catalog_names(Catalog.objects.slugs_among)
        work.register()
        _lend_metrics()
        register_embedding_backlog(Catalog.objects.embedding_backlog)
        # With QUIVER_QUERY_ENCODER_STORE=postgres, the newest encoder is copied
        # from the database into this process's state directory before use.
        if refresh not in REFRESHERS:
            REFRESHERS.append(refresh)


def _lend_metrics() -> None:
    """/metrics counts the tools waiting for their embedding (up to its cap)."""
    from catalog.choices import EmbeddingStatus
    from catalog.models import Tool
    from telemetry.collector import Read, register_read

    sql = (
        f"(SELECT count(*) AS pending FROM (SELECT 1 FROM {Tool._meta.db_table} "
        "WHERE embedding_status = %(embedding)s LIMIT %(cap)s) AS rows)"
    )
    register_read("embeddings", Read(sql, {"embedding": EmbeddingStatus.PENDING}))
