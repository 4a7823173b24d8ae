from django.apps import AppConfig


class CallsConfig(AppConfig):
    name = "calls"
    verbose_name = "Calls and approvals"

    def ready(self) -> None:
        # /metrics counts the approvals waiting for a person from their rows.
        from calls.models import Approval, ApprovalStatus
        from telemetry.collector import Read, register_read

        sql = (
            "(SELECT count(*) AS pending, min(created) AS since "
            f"FROM {Approval._meta.db_table} WHERE status = %(pending)s)"
        )
        register_read("approvals", Read(sql, {"pending": ApprovalStatus.PENDING}))
