from django.apps import AppConfig


class SelectionConfig(AppConfig):
    name = "selection"
    verbose_name = "Selection"

    def ready(self) -> None:
        # The console's first steps name "Try a selection" (catalog.first_steps).
        from selection.first_steps import register

        register()
