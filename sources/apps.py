from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources"

    def ready(self) -> None:
        # The console's first steps name "Add a source" (catalog.first_steps).
        from sources.first_steps import register

        register()
