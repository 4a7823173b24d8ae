from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources"

    def ready(self) -> None:
        # An approved change from a source is the upstream definition over the
        # tool, as a sync writes it (catalog reviews ask the proposer).
        from catalog.services.pinning import register_applier
        from sources.pinning import apply_approved

        register_applier("source", apply_approved)
