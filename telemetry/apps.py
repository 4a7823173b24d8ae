from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "telemetry"
    verbose_name = "Telemetry"

    def ready(self) -> None:
        # Traces are set up (or not) once per process, before the WSGI handler
        # reads MIDDLEWARE (the Django instrumentation adds its own there).
        from telemetry import processes, propagation, tracing

        # Tracing on or off: a caller's trace context never goes on as it came.
        propagation.install()
        tracing.start_from_environment()
        processes.connect()
