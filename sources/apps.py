from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources"

    def ready(self) -> None:
        # A sync is a job (of kind ``sync``) the jobs app sends to this task; the
        # console's first steps name "Add a source" (catalog.first_steps).
        from jobs import services as jobs
        from jobs.choices import JobKind
        from sources.first_steps import register

        jobs.register_job_task(JobKind.SYNC, "sources.tasks.run_sync")
        register()
        _lend_metrics()

        # An approved change from a source is the upstream definition over the
        # tool, as a sync writes it (catalog reviews ask the proposer).
        from catalog.services.pinning import register_applier
        from sources.pinning import apply_approved

        register_applier("source", apply_approved)


def _lend_metrics() -> None:
    """/metrics gives each source's status and last success, read from its row."""
    from catalog.models import Catalog
    from sources.models import Source, SourceStatus
    from telemetry.collector import SourcesRead, register_sources

    sql = (
        "SELECT c.slug, s.name, s.status, s.last_success "
        f"FROM {Source._meta.db_table} s "
        f"JOIN {Catalog._meta.db_table} c ON c.id = s.catalog_id ORDER BY s.id"
    )
    register_sources(SourcesRead(sql, tuple(SourceStatus.values)))
