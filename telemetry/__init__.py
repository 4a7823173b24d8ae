"""Telemetry: Prometheus metrics (GET /metrics), OpenTelemetry traces and the
health check (GET /healthz).

Nothing here decides anything: the other apps report what happened (a request,
a selection, a call, a task) through ``telemetry.metrics`` and
``telemetry.tracing``, which import no app; what the database holds is read at
scrape time by ``telemetry.collector``, from the reads the apps lend it."""
