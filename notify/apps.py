from django.apps import AppConfig


class NotifyConfig(AppConfig):
    name = "notify"
    verbose_name = "Notifications"

    def ready(self) -> None:
        # The calls app announces each committed step of an approval; webhooks
        # and email hear of it here (calls knows nothing of them).
        from calls import lifecycle
        from notify.services import approval_event

        lifecycle.listen(approval_event)
