"""Sending a delivery: one attempt at a time, claimed, signed, guarded, logged.

An attempt is claimed by a conditional update with a lease, so two workers never
send one delivery at once; the stored event is signed (``notify.signing``) and POSTed
through the sources' guarded transport, no redirect followed, bounded by
``QUIVER_WEBHOOK_TIMEOUT_S``. A 2xx is ``delivered``; anything else is tried again
after a growing wait until ``failed``, and the error kept is scrubbed of the URL and
the secrets. The sweep gives back attempts whose worker died and sends what is due.
The rules: docs/how-to/operating.md, Delivery, retries and the log.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import re
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import unquote, unquote_plus, urlsplit

import httpx2
from django.conf import settings
from django.db.models import F
from django.utils import timezone

from config.aio import run_sync
from jobs import services as jobs
from notify.choices import DeliveryOutcome, DeliveryStatus
from notify.models import Delivery
from notify.payloads import render
from notify.signing import HEADER, SecretUnreadable, signature_header, signing_secrets
from sources.connect import guarded_transport
from sources.netguard import DeniedAddress
from sources.secrets import MASK, MIN_DERIVED, Scrubber, origin
from telemetry import metrics

DELIVER = "notify.tasks.deliver_webhook"
USER_AGENT = "Quiver-Webhooks/1"
LEASE_MARGIN_S = 30
EARLY_S = 2  # a retry's countdown may fire this early on another host's clock
EXCERPT_CHARS = 200
# Read this much of an answer, so a secret that starts inside the excerpt shown is
# read whole and masked whole (the longest spelling of a 2,000-character URL).
READ_BYTES = 16 * 1024
WRAPPED_MAX = 512  # longest secret also looked for cut by spaces
ERROR_CHARS = 480
SWEEP_BATCH = 500


@dataclass(frozen=True)
class Sent:
    """What one POST came to: a status code, or an error before any."""

    status: int | None = None
    reason: str = ""
    excerpt: str = ""
    error: str = ""
    refused: bool = False
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def attempt(delivery_id: int) -> float | None:
    """One attempt of the delivery if it is due and nobody holds it; the
    seconds until the next attempt, or None when none is due."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None
    webhook = delivery.webhook
    if not webhook.active:
        _fail(delivery, "webhook: paused when the delivery was due; replay it")
        return None
    try:
        keys = signing_secrets(webhook, timezone.now())
    except SecretUnreadable as exc:
        _fail(delivery, str(exc))
        return None
    body = render(webhook.format, delivery.payload)
    stamp = int(timezone.now().timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Quiver-Event": delivery.event,
        "Quiver-Event-Id": str(delivery.event_id),
        "Quiver-Delivery": str(delivery.pk),
        HEADER: signature_header(keys, stamp, body),
    }
    sent = post(webhook.url, body, headers, float(settings.QUIVER_WEBHOOK_TIMEOUT_S))
    return _record(delivery, sent, secrets_of(webhook.url, keys, headers[HEADER]))


def _claim(delivery_id: int) -> Delivery | None:
    now = timezone.now()
    lease = timedelta(seconds=settings.QUIVER_WEBHOOK_TIMEOUT_S + LEASE_MARGIN_S)
    claimed = Delivery.objects.filter(
        pk=delivery_id,
        status=DeliveryStatus.PENDING,
        next_attempt__lte=now + timedelta(seconds=EARLY_S),
    ).update(
        status=DeliveryStatus.SENDING,
        attempts=F("attempts") + 1,
        lease_until=now + lease,
        last_attempt=now,
    )
    if claimed != 1:
        return None
    return (
        Delivery.objects.select_related("webhook__catalog")
        .filter(pk=delivery_id)
        .first()
    )


class _NoWebhookPaths(logging.Filter):
    """httpx logs each request's whole URL at INFO; a webhook's path may be its
    secret (a Slack URL's is), so while one is sent its URL is logged as its
    origin only."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and _IN_FLIGHT:
            record.args = tuple(
                f"{origin(str(arg))}/…" if str(arg) in _IN_FLIGHT else arg
                for arg in record.args
            )
        return True


_IN_FLIGHT: set[str] = set()
logging.getLogger("httpx2").addFilter(_NoWebhookPaths())


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Sent:
    """POST ``body`` to ``url`` through the guarded transport; never raises."""
    key = str(httpx2.URL(url))
    _IN_FLIGHT.add(key)
    try:
        return run_sync(_post(url, body, headers, timeout))
    except TimeoutError:
        return Sent(error=f"timeout: no answer within {timeout:g} s")
    except httpx2.HTTPError as exc:
        return Sent(error=_describe(exc), refused=_denied(exc))
    finally:
        _IN_FLIGHT.discard(key)


async def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Sent:
    async with (
        asyncio.timeout(timeout),
        httpx2.AsyncClient(
            transport=guarded_transport(),
            timeout=httpx2.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,
        ) as http,
        http.stream("POST", url, content=body, headers=headers) as response,
    ):
        read = b""
        async for chunk in response.aiter_bytes():
            read += chunk
            if len(read) >= READ_BYTES:
                break
        return Sent(
            status=response.status_code,
            reason=response.reason_phrase,
            excerpt=_decoded(read[:READ_BYTES], response.charset_encoding),
            retry_after=retry_after(response.headers.get("Retry-After")),
        )


def _decoded(read: bytes, charset: str | None) -> str:
    """The answer's text in the charset it names (a secret echoed in UTF-16 is
    still found), else UTF-8."""
    try:
        return read.decode(charset or "utf-8", "replace")
    except LookupError:
        return read.decode("utf-8", "replace")


def retry_after(value: str | None) -> float | None:
    """A receiver's ``Retry-After``: seconds, or an HTTP date from now."""
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _denied(exc: BaseException) -> bool:
    """The guard refused the address (somewhere in the exception's causes)."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, DeniedAddress):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _describe(exc: BaseException) -> str:
    kind = type(exc).__name__
    return f"{kind}: {exc}" if str(exc) else kind


def secrets_of(url: str, keys: list[str], signature: str = "") -> dict[str, str]:
    """What no line of the log may show, in any spelling (``sources.secrets.
    Scrubber``): the URL, its path and each of its segments, its query and each
    of its values (as sent and decoded), its fragment, the signing secrets and
    the signature header sent."""
    parts = urlsplit(url)
    found = [url, parts.path, parts.query, parts.fragment, *keys, signature]
    for segment in parts.path.split("/"):
        found += [segment, unquote(segment)]
    for pair in parts.query.split("&"):
        value = pair.partition("=")[2]
        found += [value, unquote_plus(value)]
    return {f"secret{i}": value for i, value in enumerate(found) if len(value) > 1}


def error_text(sent: Sent, secrets: dict[str, str]) -> str:
    """The log's line for a failed attempt: one line, bounded, and every part
    the receiver or a library wrote (reason, answer, error) scrubbed, the
    answer scrubbed whole before the excerpt is cut from it."""
    scrub = Scrubber(secrets)
    if sent.status is None:
        return _line(sent.error, scrub)[:ERROR_CHARS]
    text = f"HTTP {sent.status} {_line(sent.reason, scrub)}".rstrip()
    if 300 <= sent.status < 400:
        text += " (redirects are not followed)"
    excerpt = _line(sent.excerpt, scrub)[:EXCERPT_CHARS]
    if excerpt:
        text += f": {excerpt}"
    return text[:ERROR_CHARS]


def _line(text: str, scrub: Scrubber) -> str:
    """``text`` scrubbed, made one printable line, and scrubbed again, with a
    space allowed between any two characters of a secret (an answer that wraps
    its lines cut the secret where it now reads a space)."""
    text = "".join(c if c.isprintable() else " " for c in scrub(text))
    text = scrub(" ".join(text.split()))
    wrapped = _wrapped(scrub)
    return wrapped.sub(MASK, text) if wrapped is not None else text


def _wrapped(scrub: Scrubber) -> re.Pattern[str] | None:
    forms = [f for f in scrub.forms if MIN_DERIVED <= len(f) <= WRAPPED_MAX]
    if not forms:
        return None
    return re.compile("|".join(" ?".join(map(re.escape, f)) for f in forms))


def backoff(attempts: int, retry_after: float | None = None) -> float:
    """Seconds before the next attempt after ``attempts`` tries: doubling from
    ``QUIVER_WEBHOOK_BACKOFF_S``, at most ``QUIVER_WEBHOOK_BACKOFF_MAX_S``, with
    ±20% jitter (so receivers that failed together are not retried together),
    and no sooner than the receiver's ``Retry-After`` (within the same cap)."""
    cap = float(settings.QUIVER_WEBHOOK_BACKOFF_MAX_S)
    wait = min(cap, settings.QUIVER_WEBHOOK_BACKOFF_S * 2 ** max(0, attempts - 1))
    wait *= random.uniform(0.8, 1.2)
    if retry_after:
        wait = max(wait, min(retry_after, cap))
    return wait


def _record(delivery: Delivery, sent: Sent, secrets: dict[str, str]) -> float | None:
    """The attempt's outcome on its row; the seconds until the next attempt, or
    None when there is none or the row is no longer this attempt's."""
    now = timezone.now()
    fields: dict[str, Any] = {"last_status_code": sent.status}
    if sent.ok:
        _finish(
            delivery, DeliveryOutcome.DELIVERED, delivered=now, last_error="", **fields
        )
        return None
    fields["last_error"] = error_text(sent, secrets)
    if sent.refused:
        _finish(delivery, DeliveryOutcome.REFUSED, **fields)
        return None
    if delivery.attempts >= settings.QUIVER_WEBHOOK_MAX_ATTEMPTS:
        _finish(delivery, DeliveryOutcome.FAILED, **fields)
        return None
    wait = backoff(delivery.attempts, sent.retry_after)
    fields["next_attempt"] = now + timedelta(seconds=wait)
    return wait if _finish(delivery, DeliveryOutcome.RETRYING, **fields) else None


def _fail(delivery: Delivery, reason: str) -> None:
    _finish(delivery, DeliveryOutcome.FAILED, last_error=reason[:ERROR_CHARS])


STATUS_AFTER = {
    DeliveryOutcome.DELIVERED: DeliveryStatus.DELIVERED,
    DeliveryOutcome.RETRYING: DeliveryStatus.PENDING,
    DeliveryOutcome.FAILED: DeliveryStatus.FAILED,
    DeliveryOutcome.REFUSED: DeliveryStatus.FAILED,
}


def _finish(delivery: Delivery, outcome: DeliveryOutcome, **fields: Any) -> bool:
    """Record the attempt on the row this worker claimed, and count it; False
    when the row is not this attempt's any more (fenced: a row the sweep took
    back after the lease is left, uncounted, to its new attempt)."""
    recorded = Delivery.objects.filter(
        pk=delivery.pk, status=DeliveryStatus.SENDING, attempts=delivery.attempts
    ).update(status=STATUS_AFTER[outcome], lease_until=None, **fields)
    if recorded:
        metrics.webhook_delivered(outcome.value)
    return bool(recorded)


def sweep(now: Any = None) -> dict[str, int]:
    """Attempts whose worker died wait again (or fail, out of attempts); what
    is due and was not sent is sent. Returns the counts."""
    now = now or timezone.now()
    lost = Delivery.objects.filter(status=DeliveryStatus.SENDING, lease_until__lt=now)
    max_attempts = settings.QUIVER_WEBHOOK_MAX_ATTEMPTS
    stopped = "the worker stopped during the attempt"
    failed = lost.filter(attempts__gte=max_attempts).update(
        status=DeliveryStatus.FAILED, lease_until=None, last_error=stopped
    )
    waiting = lost.update(
        status=DeliveryStatus.PENDING,
        lease_until=None,
        next_attempt=now,
        last_error=stopped,
    )
    late = now - timedelta(seconds=settings.QUIVER_WEBHOOK_SWEEP_S)
    due = list(
        Delivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt__lte=late)
        .order_by("next_attempt")
        .values_list("pk", flat=True)[:SWEEP_BATCH]
    )
    for pk in due:
        jobs.send(DELIVER, pk)
    return {"lost": failed + waiting, "sent": len(due)}
