"""The S3 sink: one immutable object per checkpoint line in an S3-compatible bucket.

Each line is written with ``If-None-Match: *`` (optionally under object lock), so the
copy stays out of the database owner's reach. Requests are signed with AWS Signature
Version 4 by the small signer below over httpx: no SDK to install for one PUT, one
GET and a list. ``read_lines`` reads the copy back for ``audit_verify --checkpoints
s3``. The settings: docs/reference/settings.md (``QUIVER_AUDIT_CHECKPOINT_S3*``).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import xml.etree.ElementTree as ElementTree
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlparse

import httpx
from django.conf import settings

from config import jsonparse

_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


class S3Error(RuntimeError):
    """The bucket refused a request or answered something unexpected."""


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.digest(key, text.encode(), "sha256")


def _encode(text: str) -> str:
    return quote(text, safe="-_.~")


def sign_request(
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    credentials: tuple[str, str, str],
    now: datetime | None = None,
) -> dict[str, str]:
    """``headers`` plus host, x-amz-date, x-amz-content-sha256 and Authorization
    (AWS Signature Version 4, service s3) for ``url`` (its path and query already
    URI-encoded, the query's parameters in sorted order)."""
    access_key, secret_key, region = credentials
    moment = now or datetime.now(UTC)
    stamp, day = moment.strftime("%Y%m%dT%H%M%SZ"), moment.strftime("%Y%m%d")
    parts = urlparse(url)
    signed = {name.lower(): " ".join(value.split()) for name, value in headers.items()}
    signed.update(
        {
            "host": parts.netloc,
            "x-amz-date": stamp,
            "x-amz-content-sha256": hashlib.sha256(body).hexdigest(),
        }
    )
    names = sorted(signed)
    canonical = "\n".join(
        [
            method,
            parts.path or "/",
            parts.query,
            "".join(f"{name}:{signed[name]}\n" for name in names),
            ";".join(names),
            signed["x-amz-content-sha256"],
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, digest])
    key = _hmac(("AWS4" + secret_key).encode(), day)
    for part in (region, "s3", "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), "sha256").hexdigest()
    signed["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )
    return signed


def object_key(prefix: str, record: dict[str, Any]) -> str:
    seq = int(record.get("head_seq", record.get("through_seq", 0)))
    name = f"{seq:012d}-{record.get('kind', 'checkpoint')}.json"
    return f"{prefix}/{name}" if prefix else name


class Bucket:
    """One bucket and prefix on an S3-compatible endpoint; the S3 sink."""

    name = "s3"

    def __init__(
        self,
        url: str,
        endpoint: str,
        credentials: tuple[str, str, str],
        timeout: float = 5.0,
        lock_days: int = 0,
    ) -> None:
        parsed = urlparse(url)
        self.bucket, self.prefix = parsed.netloc, parsed.path.strip("/")
        self.endpoint = endpoint.rstrip("/")
        self.credentials, self.timeout, self.lock_days = credentials, timeout, lock_days

    def _request(
        self,
        method: str,
        key: str = "",
        query: dict[str, str] | None = None,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        path = f"/{self.bucket}" + (f"/{quote(key, safe='/-_.~')}" if key else "")
        search = "&".join(
            f"{_encode(name)}={_encode(value)}"
            for name, value in sorted((query or {}).items())
        )
        url = f"{self.endpoint}{path}" + (f"?{search}" if search else "")
        signed = sign_request(method, url, headers or {}, body, self.credentials)
        return httpx.request(
            method, url, content=body, headers=signed, timeout=self.timeout
        )

    def send(self, record: dict[str, Any], line: str) -> None:
        """Write the line as a new object; an object already there with the same
        line is a delivery done before (a retry), any other is an error."""
        key = object_key(self.prefix, record)
        body = (line + "\n").encode()
        headers = {
            "content-type": "application/json",
            "content-md5": base64.b64encode(hashlib.md5(body).digest()).decode(),
            "if-none-match": "*",
        }
        if self.lock_days:
            until = datetime.now(UTC) + timedelta(days=self.lock_days)
            headers["x-amz-object-lock-mode"] = "COMPLIANCE"
            headers["x-amz-object-lock-retain-until-date"] = until.strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
        response = self._request("PUT", key, body=body, headers=headers)
        if response.status_code != 412:
            _check(response, f"PUT {key}")
        elif self.get(key) != body:
            raise S3Error(f"{key} already holds another line: not replaced")

    def get(self, key: str) -> bytes | None:
        response = self._request("GET", key)
        if response.status_code == 404:
            return None
        _check(response, f"GET {key}")
        return response.content

    def keys(self) -> list[str]:
        """Every object key under the prefix (ListObjectsV2, page by page)."""
        found: list[str] = []
        query = {"list-type": "2", "prefix": f"{self.prefix}/" if self.prefix else ""}
        while True:
            response = self._request("GET", query=query)
            _check(response, "list")
            root = ElementTree.fromstring(response.content)
            found += [node.text or "" for node in root.iter(f"{_NS}Key")]
            token = root.findtext(f"{_NS}NextContinuationToken")
            if root.findtext(f"{_NS}IsTruncated") != "true" or not token:
                return found
            query["continuation-token"] = token

    def read_lines(self) -> list[str]:
        """The bucket's lines, in the order their ``prev_sig`` links give."""
        lines = [(self.get(key) or b"").decode().strip() for key in self.keys()]
        return link_order([line for line in lines if line])


def link_order(lines: list[str]) -> list[str]:
    """Lines put in chain order: each follows the one whose ``sig`` is its
    ``prev_sig``. Lines that no chain from the first reaches go last, where the
    book names them as out of order."""
    by_prev: dict[str, list[str]] = {}
    for line in lines:
        try:
            prev = str(jsonparse.loads(line).get("prev_sig", ""))
        except (ValueError, AttributeError):
            prev = "?"
        by_prev.setdefault(prev, []).append(line)
    ordered: list[str] = []
    prev = ""
    while by_prev.get(prev):
        line = by_prev[prev].pop(0)
        ordered.append(line)
        prev = str(jsonparse.loads(line).get("sig", ""))
    return ordered + [line for rest in by_prev.values() for line in rest]


def _check(response: httpx.Response, what: str) -> None:
    if response.status_code < 300:
        return
    code = ""
    with contextlib.suppress(ElementTree.ParseError):
        code = ElementTree.fromstring(response.content).findtext("Code") or ""
    raise S3Error(f"{what}: HTTP {response.status_code} {code}".strip())


def bucket_from_settings() -> Bucket:
    return Bucket(
        settings.QUIVER_AUDIT_CHECKPOINT_S3,
        settings.QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT,
        (
            settings.QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY,
            settings.QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY,
            settings.QUIVER_AUDIT_CHECKPOINT_S3_REGION,
        ),
        timeout=float(settings.QUIVER_AUDIT_SINK_TIMEOUT_S),
        lock_days=settings.QUIVER_AUDIT_CHECKPOINT_S3_LOCK_DAYS,
    )
