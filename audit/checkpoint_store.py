"""Where the signed checkpoint lines are kept: a file, or a table in Postgres.

``QUIVER_AUDIT_CHECKPOINT_STORE`` chooses: ``file`` (one JSON line each, appended and
fsynced, notes beside it) for one host or a shared volume, ``postgres`` (append-only
tables) for processes that share nothing but the database. Lines are appended under
the chain lock only (audit.checkpoints), so they are kept in the order they were
signed. Why each, and what the database's owner can still do:
docs/explanation/audit-chain.md, Where the checkpoints are kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction

from audit.models import AuditNote, CheckpointLine
from config import jsonparse

Note = dict[str, Any]
STORES = ("file", "postgres")


class CheckpointStore(Protocol):
    name: str
    source: str  # how verify names it in a problem ("checkpoint file x.jsonl")

    def last_line(self) -> str:
        """The last line appended ("" when there is none)."""

    def append(self, record: Note, line: str) -> None:
        """Keep ``line`` (the signed ``record``) after the last one."""

    def lines(self) -> Iterator[str]:
        """Every line in the order appended."""

    def read_note(self, name: str) -> Note:
        """The note called ``name`` ({} when there is none or it cannot be read)."""

    def update_note(self, name: str, change: Callable[[Note], Note]) -> None:
        """Replace the note with ``change(note)``."""


class FileStore:
    """The checkpoint file and JSON notes beside it."""

    name = "file"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.source = f"checkpoint file {path.name}"

    def last_line(self) -> str:
        """The file's last line, read from its end (the file only grows)."""
        if not self.path.exists():
            return ""
        with self.path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - 65536))
            lines = handle.read().splitlines()
        return lines[-1].decode() if lines else ""

    def append(self, record: Note, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def lines(self) -> Iterator[str]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as handle:
            yield from handle

    def note_path(self, name: str) -> Path:
        if name == "sinks":
            return self.path.parent / "audit-checkpoint-sinks.json"
        return self.path.with_name(f"{self.path.name}.{name.replace('_', '-')}.json")

    def read_note(self, name: str) -> Note:
        try:
            data = jsonparse.loads(self.note_path(name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def update_note(self, name: str, change: Callable[[Note], Note]) -> None:
        """Written whole beside the note, then renamed over it: a reader never sees
        half of one (two processes racing may lose one update, never the note)."""
        path = self.note_path(name)
        data = change(self.read_note(name))
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        os.replace(temporary, path)


class PostgresStore:
    """The ``audit_checkpoint_line`` and ``audit_note`` tables."""

    name = "postgres"
    source = "checkpoint table audit_checkpoint_line"

    def last_line(self) -> str:
        last = CheckpointLine.objects.order_by("-id").values_list("line", flat=True)
        return last.first() or ""

    def append(self, record: Note, line: str) -> None:
        CheckpointLine.objects.create(
            line=line, sig=str(record["sig"]), prev_sig=str(record["prev_sig"])
        )

    def lines(self) -> Iterator[str]:
        rows = CheckpointLine.objects.order_by("id").values_list("line", flat=True)
        yield from rows.iterator(chunk_size=2000)

    def read_note(self, name: str) -> Note:
        data = AuditNote.objects.filter(name=name).values_list("data", flat=True)
        found = data.first()
        return found if isinstance(found, dict) else {}

    def update_note(self, name: str, change: Callable[[Note], Note]) -> None:
        """Read, changed and written under the note's row lock: no update is lost."""
        with transaction.atomic():
            AuditNote.objects.get_or_create(name=name)
            note = AuditNote.objects.select_for_update().get(name=name)
            note.data = change(note.data if isinstance(note.data, dict) else {})
            note.save(update_fields=["data", "updated"])


def store_named(name: str) -> CheckpointStore:
    """The store called ``name`` (``file`` or ``postgres``), as the settings set it."""
    if name == "file":
        return FileStore(Path(settings.QUIVER_AUDIT_CHECKPOINT_FILE))
    if name == "postgres":
        return PostgresStore()
    raise ValueError(f"must be one of {', '.join(STORES)}")


def checkpoint_store() -> CheckpointStore:
    """The store ``QUIVER_AUDIT_CHECKPOINT_STORE`` names: where lines are kept."""
    return store_named(settings.QUIVER_AUDIT_CHECKPOINT_STORE)
