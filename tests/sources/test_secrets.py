"""Header values are encrypted at rest and never shown: the database column, the
audit rows, the API answers, the job and the catalog's export never hold them,
while the upstream does receive them."""

from __future__ import annotations

import base64
import json
import logging
from urllib.parse import quote, quote_plus

import pytest
from django.db import connection

from audit.models import AuditEvent
from sources.models import Source
from sources.secrets import (
    HeadersUnreadable,
    decrypt_headers,
    encrypt_headers,
    scrub,
)
from tests.sources.conftest import SECRET, sync

pytestmark = pytest.mark.django_db
SOURCES = "/api/v1/catalogs/default/sources"


def raw_column(source_id: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT headers_encrypted FROM sources_source WHERE id = %s", [source_id]
        )
        return str(cursor.fetchone()[0])


def test_the_secret_reaches_the_upstream_and_nowhere_else(admin_api, upstream, caplog):
    caplog.set_level(logging.DEBUG)
    upstream.required_headers = {"authorization": SECRET}
    created = admin_api.post(
        SOURCES,
        {"name": "weather", "url": upstream.url, "headers": {"Authorization": SECRET}},
        format="json",
    )
    source = Source.objects.get(pk=created.json()["id"])
    job = sync(source, actor=None)

    assert source.status == "ok" and source.tool_count == 7
    assert any(h.get("authorization") == SECRET for h in upstream.seen_headers)
    secret = "sk-upstream-7f3a9c1e5d"
    assert secret not in raw_column(source.pk)
    assert secret not in created.content.decode()
    for event in AuditEvent.objects.all():
        assert secret not in json.dumps([event.input, event.output, event.summary])
    assert secret not in json.dumps([job.items, job.errors, job.options])
    answers = [
        admin_api.get(f"/api/v1/sources/{source.pk}"),
        admin_api.get(SOURCES),
        admin_api.get(f"/api/v1/jobs/{job.pk}"),
        admin_api.get("/api/v1/catalogs/default/export?format=mcp"),
        admin_api.get("/api/v1/tools?catalog=default"),
    ]
    for answer in answers:
        assert answer.status_code == 200
        assert secret not in answer.content.decode()
    assert caplog.records and secret not in caplog.text


def test_a_failing_sync_logs_no_secret(make_source, upstream, caplog):
    caplog.set_level(logging.DEBUG)
    upstream.required_headers = {"authorization": "Bearer the-right-one"}
    source = make_source(upstream.url, headers={"Authorization": SECRET})
    sync(source)
    assert source.status == "error"
    assert "sync failed" in caplog.text and "sk-upstream" not in caplog.text


def test_the_column_is_authenticated_encryption_not_an_encoding():
    token = encrypt_headers({"X-Key": "abc-secret"})
    assert "abc-secret" not in token
    assert decrypt_headers(Source(headers_encrypted=token)) == {"X-Key": "abc-secret"}
    tampered = token[:-6] + ("A" if token[-6] != "A" else "B") + token[-5:]
    with pytest.raises(HeadersUnreadable):
        decrypt_headers(Source(headers_encrypted=tampered))


def test_two_encryptions_of_the_same_headers_differ():
    headers = {"X-Key": "abc-secret"}
    assert encrypt_headers(headers) != encrypt_headers(headers)


def test_another_key_cannot_read_them_and_an_old_key_still_can(settings):
    settings.QUIVER_SOURCE_KEY = "first-key-material-0123456789"
    token = encrypt_headers({"X-Key": "abc-secret"})
    settings.QUIVER_SOURCE_KEY = "second-key-material-9876543210"
    with pytest.raises(HeadersUnreadable, match="QUIVER_SOURCE_OLD_KEYS"):
        decrypt_headers(Source(headers_encrypted=token))
    settings.QUIVER_SOURCE_OLD_KEYS = ["first-key-material-0123456789"]
    assert decrypt_headers(Source(headers_encrypted=token)) == {"X-Key": "abc-secret"}


def test_the_key_is_not_the_secret_key_itself(settings):
    import base64
    import hashlib

    from cryptography.fernet import Fernet, InvalidToken

    settings.QUIVER_SOURCE_KEY = ""
    token = encrypt_headers({"X-Key": "abc-secret"})
    naive = base64.urlsafe_b64encode(
        hashlib.sha256(settings.SECRET_KEY.encode()).digest()
    )
    with pytest.raises(InvalidToken):
        Fernet(naive).decrypt(token.encode())


def test_scrub_masks_a_value_and_its_token_inside_an_error():
    text = scrub("refused Bearer sk-1234567890 at x", {"A": "Bearer sk-1234567890"})
    assert "sk-1234567890" not in text
    text = scrub("token sk-1234567890 was refused", {"A": "Bearer sk-1234567890"})
    assert "sk-1234567890" not in text


SCRUB_TOKEN = "sk-live-0a1b2c3d4e5f"
SCRUB_PAIR = "deploy-bot:correct-horse-battery"
SCRUB_HEADERS = {
    "Authorization": f"Bearer {SCRUB_TOKEN}",
    "Proxy-Authorization": "Basic " + base64.b64encode(SCRUB_PAIR.encode()).decode(),
}


@pytest.mark.parametrize(
    "echoed",
    [
        f"Bearer {SCRUB_TOKEN}",
        SCRUB_TOKEN,
        base64.b64encode(SCRUB_TOKEN.encode()).decode(),
        base64.b64encode(SCRUB_TOKEN.encode()).decode().rstrip("="),
        base64.urlsafe_b64encode(b"\xfb" + SCRUB_TOKEN.encode()).decode(),
        base64.b64encode(b"Authorization: Bearer " + SCRUB_TOKEN.encode()).decode(),
        base64.b64encode(b"{'auth': '" + SCRUB_TOKEN.encode() + b"'}").decode(),
        quote(f"Bearer {SCRUB_TOKEN}"),
        quote_plus(f"Bearer {SCRUB_TOKEN}"),
        quote(SCRUB_PAIR, safe="").lower(),
        SCRUB_PAIR,
        "correct-horse-battery",
        base64.b64encode(SCRUB_PAIR.encode()).decode(),
        json.dumps({"auth": f"Bearer {SCRUB_TOKEN}"})[1:-1],
    ],
    ids=[
        "header",
        "token",
        "base64",
        "base64-unpadded",
        "base64-urlsafe-shifted",
        "base64-of-a-header-line",
        "base64-of-a-dump",
        "url",
        "url-plus",
        "url-lower-hex",
        "basic-decoded",
        "basic-password",
        "basic-encoded",
        "json-escaped",
    ],
)
def test_scrub_masks_every_spelling_of_a_secret(echoed):
    text = scrub(f"the upstream said <{echoed}>, then stopped", SCRUB_HEADERS)
    assert "the upstream said <" in text and ">, then stopped" in text
    assert "••••••" in text
    for secret in (SCRUB_TOKEN, "correct-horse-battery", SCRUB_PAIR):
        assert secret not in text
    # What is left of an encoded secret cannot be decoded back to it.
    for part in text.split():
        assert SCRUB_TOKEN.encode() not in _decoded(part)


def _decoded(part: str) -> bytes:
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return decode(part.strip("<>,") + "==")
        except ValueError:
            continue
    return b""


def test_scrub_leaves_ordinary_text_alone():
    text = "deploy-bot ran 12 jobs; Bearer tokens are explained in the guide"
    assert scrub(text, SCRUB_HEADERS) == text


def test_saving_the_masked_headers_re_encrypts_them_with_the_new_key(
    settings, make_source, admin_user
):
    from sources.secrets import MASK
    from sources.services import update_source

    settings.QUIVER_SOURCE_KEY = "first-key-material-0123456789"
    source = make_source("http://127.0.0.1:9/mcp", headers={"X-Key": "abc-secret"})
    settings.QUIVER_SOURCE_KEY = "second-key-material-9876543210"
    settings.QUIVER_SOURCE_OLD_KEYS = ["first-key-material-0123456789"]

    update_source(source, {"headers": {"X-Key": MASK}}, actor=admin_user)

    settings.QUIVER_SOURCE_OLD_KEYS = []
    source.refresh_from_db()
    assert decrypt_headers(source) == {"X-Key": "abc-secret"}
