"""How a row of the audit chain is hashed, by version.

Version 1 (rows written before keyed hashing): plain SHA-256 over a canonical JSON of
the row's values, as Python sees them. Anyone can recompute it, so it only catches an
edit that does not recompute the hashes after it; those rows stay verifiable and the
first signed checkpoint covers them.

Version 2: HMAC-SHA256 with the audit key, which lives outside the database
(``QUIVER_AUDIT_KEY`` / ``_FILE``; older keys in the keyring, audit.keyring). The
message is the row's seq, id, previous hash and text fields exactly as Postgres
returns them (``input::text`` is jsonb's own canonical text), joined by NUL:
Postgres text can never hold a NUL, so the join is unambiguous and costs no
escaping. Sealing and verifying read the same bytes and never parse the stored JSON.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence

from django.core.serializers.json import DjangoJSONEncoder

from audit.keyring import fingerprint, keyring

GENESIS = "0" * 64
LEGACY = 1
KEYED = 2

# The text columns of a row, in the order hashed; sealer, verifier and archive share it.
# Its one function is named with its schema: a to_char() of the database owner's,
# put before pg_catalog on the search path, could otherwise show verify a
# timestamp that is not the row's.
CONTENT_SQL = """
    event_type, actor_name, request_id::text, coalesce(selection_id::text, ''),
    catalog_slug, catalog_version::text, summary, input::text, output::text,
    pg_catalog.to_char(created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')
"""
# What a row says, then when it was written: its content, as the SQL above reads it.
SAID_FIELDS = (
    "event_type",
    "actor_name",
    "request_id",
    "selection_id",
    "catalog_slug",
    "catalog_version",
    "summary",
    "input",
    "output",
)
CONTENT_FIELDS = (*SAID_FIELDS, "created")
# What sealing adds to a row (exports and the API show it beside the content).
SEAL_FIELDS = ("prev_hash", "hash", "hash_version", "key_id", "sealed_at")


def audit_key() -> bytes:
    """The current key (audit.keyring): it seals new rows and signs checkpoints."""
    return keyring().current


def key_id(key: bytes | None = None) -> str:
    """A short public fingerprint naming the key a row was sealed with."""
    return keyring().current_id if key is None else fingerprint(key)


def _message(seq: int, row_id: int, prev_hash: str, content: Sequence[str]) -> bytes:
    return "\x00".join([str(seq), str(row_id), prev_hash, *content]).encode()


def keyed_hash(
    key: bytes, seq: int, row_id: int, prev_hash: str, content: Sequence[str]
) -> str:
    """Version 2: the HMAC of the row's position, its link and its content."""
    return hmac.digest(key, _message(seq, row_id, prev_hash, content), "sha256").hex()


def unkeyed_hash(seq: int, row_id: int, prev_hash: str, content: Sequence[str]) -> str:
    """The same message hashed without the key: what a forger without it computes."""
    return hashlib.sha256(_message(seq, row_id, prev_hash, content)).hexdigest()


def _canonical(value: object) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), cls=DjangoJSONEncoder
    )


def legacy_hash(prev_hash: str, content: Sequence[str]) -> str:
    """Version 1, recomputed from the text columns (see the module docstring)."""
    values = dict(zip(CONTENT_FIELDS, content, strict=True))
    created = values["created"]
    if created.endswith(".000000"):
        created = created[: -len(".000000")]
    body: dict[str, object] = {
        "event_type": values["event_type"],
        "actor_name": values["actor_name"],
        "request_id": values["request_id"],
        "catalog_slug": values["catalog_slug"],
        "catalog_version": int(values["catalog_version"]),
        "summary": values["summary"],
        "input": json.loads(values["input"]),
        "output": json.loads(values["output"]),
        "created": f"{created}+00:00",
        "prev_hash": prev_hash,
    }
    if values["selection_id"]:
        body["selection_id"] = values["selection_id"]
    return hashlib.sha256(_canonical(body).encode()).hexdigest()


def sign(record: dict[str, object], key: bytes | None = None) -> str:
    """The signature of a checkpoint or archive record (all fields but ``sig``)."""
    unsigned = {name: value for name, value in record.items() if name != "sig"}
    message = json.dumps(unsigned, sort_keys=True, separators=(",", ":"))
    return hmac.digest(key or audit_key(), message.encode(), "sha256").hex()


def signature_ok(record: dict[str, object], key: bytes | None = None) -> bool:
    """Whether ``sig`` is right, by ``key`` or else the key the record's ``key_id``
    names in the keyring (false when the keyring has no such key)."""
    if key is None:
        key = keyring().key_for(str(record.get("key_id", "")))
        if key is None:
            return False
    return hmac.compare_digest(str(record.get("sig", "")), sign(record, key))


def old_signature_ok(record: dict[str, object]) -> bool:
    """A rotation line's second signature: ``old_sig`` by the retired key
    ``old_key_id`` over the line without ``sig`` and ``old_sig``."""
    key = keyring().key_for(str(record.get("old_key_id", "")))
    if key is None:
        return False
    unsigned = {name: v for name, v in record.items() if name not in ("sig", "old_sig")}
    return hmac.compare_digest(str(record.get("old_sig", "")), sign(unsigned, key))
