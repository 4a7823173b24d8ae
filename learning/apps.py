from django.apps import AppConfig


class LearningConfig(AppConfig):
    name = "learning"
    verbose_name = "Labels and learning"

    def ready(self) -> None:
        # The learn job's tasks live beside the labels' tasks module.
        from learning import learn_tasks  # noqa: F401
