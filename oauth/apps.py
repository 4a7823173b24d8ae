from django.apps import AppConfig


class OAuthConfig(AppConfig):
    name = "oauth"
    verbose_name = "OAuth"

    def ready(self) -> None:
        # Every audit row an agent writes names the person it acted for.
        from audit.acting import register_describer
        from oauth.acting import describe

        register_describer(describe)
