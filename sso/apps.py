from django.apps import AppConfig


class SsoConfig(AppConfig):
    """Single sign-on for people: OpenID Connect, the claim mapping, the sign-in
    policy and the sign-in, sign-out and refusal audit events."""

    name = "sso"
    verbose_name = "Single sign-on"

    def ready(self) -> None:
        from sso import signals  # noqa: F401 - sign-outs are audited
