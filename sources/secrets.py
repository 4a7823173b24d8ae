"""TEMPORARY (i22-calls, until i22-sources' module is merged; theirs wins): a
source's header values encrypted at rest with a key derived from SECRET_KEY."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from cryptography.fernet import Fernet
from django.conf import settings


def _fernet() -> Fernet:
    digest = hashlib.sha256(f"quiver-source-headers:{settings.SECRET_KEY}".encode())
    return Fernet(base64.urlsafe_b64encode(digest.digest()))


def encrypt_headers(headers: dict[str, str]) -> str:
    return _fernet().encrypt(json.dumps(headers).encode()).decode() if headers else ""


def decrypt_headers(source: Any) -> dict[str, str]:
    if not source.headers_encrypted:
        return {}
    return dict(json.loads(_fernet().decrypt(source.headers_encrypted.encode())))
