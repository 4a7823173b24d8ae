"""First-run set-up for `make run`: default catalog, admin account, demo catalog."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from catalog.formats import import_tools
from catalog.models import Tool
from catalog.services import create_tool, ensure_default_catalog
from catalog.services.embeddings import current_backend_id, start_reindex
from config import jsonparse

DEMO_FILE = Path(settings.BASE_DIR) / "catalog" / "demo" / "demo_catalog.json"


class Command(BaseCommand):
    help = "Create the default catalog and an admin account; load the demo catalog."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-demo", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        catalog = ensure_default_catalog()
        password, password_file = self._admin()
        if not options["no_demo"] and not Tool.objects.filter(catalog=catalog).exists():
            loaded = self._demo(catalog)
            self.stdout.write(f"Loaded the demo catalog: {loaded} tools.")
        if catalog.active_embedding_model != current_backend_id():
            start_reindex(catalog)
            self.stdout.write("Queued embedding of the catalog (see Jobs).")
        if password is None:
            self.stdout.write(
                f"Log in as admin; the password is in {password_file} "
                "(or run: make manage ARGS='changepassword admin')."
            )
        else:
            # A secret is the last line of stdout, alone (docs/explanation/security.md).
            self.stdout.write(
                "Created the admin account. user: admin; its password (also saved "
                f"in {password_file}) is the next line:"
            )
            self.stdout.write(password)

    def _admin(self) -> tuple[str | None, Path]:
        """Make the admin account if there is none; its new password, or None."""
        state = Path(os.environ.get("QUIVER_STATE_DIR", settings.BASE_DIR / ".quiver"))
        password_file = state / "admin_password.txt"
        users = get_user_model().objects
        if users.filter(username="admin").exists():
            return None, password_file
        password = secrets.token_urlsafe(12)
        # The file first: an unwritable state directory fails before an admin
        # exists whose password no one was ever shown.
        state.mkdir(parents=True, exist_ok=True)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
        users.create_superuser("admin", "admin@localhost", password)
        return password, password_file

    def _demo(self, catalog: Any) -> int:
        document = jsonparse.loads(DEMO_FILE.read_text())
        count = 0
        for item in import_tools(document, "canonical"):
            if item.spec is not None:
                create_tool(catalog, item.spec, actor=None)
                count += 1
        return count
