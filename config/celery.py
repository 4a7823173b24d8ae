"""The Celery application; settings come from Django's CELERY_ namespace."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("quiver")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
