"""Bind every stored source's header values to the origin of its URL
(``sources.secrets``): from now on a URL changed to another origin, by any
path, finds them refused rather than sent. Text the configured keys cannot read
is left as it is (it is refused anyway, and an admin enters it again)."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from sources import secrets


def bind(apps: Any, schema_editor: Any) -> None:
    Source = apps.get_model("sources", "Source")
    for source in Source.objects.exclude(headers_encrypted="").iterator():
        try:
            headers = secrets.decrypt_headers(source)
        except secrets.HeadersUnreadable:
            continue
        source.headers_encrypted = secrets.encrypt_headers(headers, source.url)
        source.save(update_fields=["headers_encrypted"])


def unbind(apps: Any, schema_editor: Any) -> None:
    Source = apps.get_model("sources", "Source")
    for source in Source.objects.exclude(headers_encrypted="").iterator():
        try:
            headers = secrets.decrypt_headers(source)
        except secrets.HeadersUnreadable:
            continue
        source.headers_encrypted = secrets.encrypt_headers(headers)
        source.save(update_fields=["headers_encrypted"])


class Migration(migrations.Migration):
    dependencies = [("sources", "0002_stdio_kind")]

    operations = [migrations.RunPython(bind, unbind, elidable=True)]
