"""The console's import dry run, carried to its confirmation by the browser.

The preview page posts the document back, with a signed token naming who ran the
dry run, into which catalog, in which format, with which ``names`` option, and the
document's SHA-256: the
confirmation imports exactly the previewed document, for the person who previewed
it, within ``MAX_AGE`` seconds; anything else is refused and nothing is kept on
the server meanwhile (the request size limit bounds the document)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.core import signing

from audit.actors import Caller

SALT = "catalog.import-preview"
MAX_AGE = 3600
AGAIN = (
    "The preview expired or its document changed: preview the file again "
    "before importing it."
)


class PreviewRefused(Exception):
    """The confirmation does not match a preview this person ran."""


def document_text(document: Any) -> str:
    """The document as the confirmation posts it back (compact JSON)."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def sign(user: Caller, report: dict[str, Any], text: str) -> str:
    claims = {
        "user": user.pk,
        "catalog": report["catalog"],
        "format": report["format"],
        "names": report["names"],
        "sha256": _digest(text),
    }
    return signing.dumps(claims, salt=SALT)


def check(token: str, user: Caller, text: str) -> tuple[str, str, str]:
    """(catalog slug, format, names option) of the preview this confirmation
    belongs to."""
    try:
        claims = signing.loads(token, salt=SALT, max_age=MAX_AGE)
    except signing.BadSignature as exc:
        raise PreviewRefused(AGAIN) from exc
    if claims.get("user") != user.pk or claims.get("sha256") != _digest(text):
        raise PreviewRefused(AGAIN)
    names = str(claims.get("names") or "refuse")
    return str(claims["catalog"]), str(claims["format"]), names
