"""WSGI entry point for gunicorn: Django, and ``/mcp`` beside it (gateway.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

from gateway.wsgi import with_mcp  # noqa: E402
from selection.warmup import warm_up_in_background  # noqa: E402
from telemetry.processes import process_started  # noqa: E402

application = with_mcp(django_application)
process_started("web")
warm_up_in_background()  # each web process gets ready as it starts
