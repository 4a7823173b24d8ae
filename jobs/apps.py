from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        # /metrics counts the ``quiver`` queue's jobs from their rows.
        from jobs.choices import JobState
        from jobs.models import Job
        from telemetry.collector import WAITING, Read, register_read

        table = Job._meta.db_table
        sql = (
            f"(SELECT {WAITING} FROM {table} WHERE state IN (%(queued)s, %(running)s))"
        )
        params = {"queued": JobState.QUEUED, "running": JobState.RUNNING}
        register_read("jobs", Read(sql, params))
