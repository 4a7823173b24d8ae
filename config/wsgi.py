"""WSGI entry point for gunicorn."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from selection.warmup import warm_up_in_background  # noqa: E402

warm_up_in_background()  # each web process gets ready as it starts
