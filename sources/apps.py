from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources"

    def ready(self) -> None:
        # A sync is a job (of kind ``sync``) the jobs app sends to this task.
        from jobs import services as jobs
        from jobs.choices import JobKind

        jobs.register_job_task(JobKind.SYNC, "sources.tasks.run_sync")
