"""A real OpenID provider for the sign-in tests: the npm ``oidc-provider`` (an
OpenID certified implementation, installed by ``make servers``), run by
tests/servers/oidc_provider.mjs on 127.0.0.1 at a free port.

``running_provider`` starts it with Quiver registered as a confidential client
(this redirect URI, PKCE required) and the people it knows; ``Provider.people``
rewrites what it says about them (their groups claim, a tampered ID token), read
by the provider at every lookup, so a test changes a person at the provider
between two sign-ins. ``settings_for`` is Quiver's single sign-on set to it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.env import OidcProvider

HERE = Path(__file__).resolve().parent / "servers"
SCRIPT = HERE / "oidc_provider.mjs"
CLIENT_ID = "quiver"
CLIENT_SECRET = "quiver-test-client-secret-6f2d"  # noqa: S105 - the tests' own


@dataclass
class Provider:
    issuer: str
    accounts: Path

    def people(self, accounts: dict[str, dict[str, Any]]) -> None:
        """What the provider says about each login (groups, email, tamper)."""
        self.accounts.write_text(json.dumps(accounts))


@contextmanager
def running_provider(redirect_uri: str) -> Iterator[Provider]:
    """The provider, until the block ends; its issuer is http://127.0.0.1:<port>."""
    node = shutil.which("node")
    assert node, "node is not on PATH (Node 20 is on the machine image)"
    assert (HERE / "node_modules" / "oidc-provider").exists(), "run `make servers`"
    with tempfile.TemporaryDirectory(prefix="quiver-oidc-") as folder:
        accounts = Path(folder) / "accounts.json"
        accounts.write_text("{}")
        config = Path(folder) / "config.json"
        client = {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uris": [redirect_uri],
        }
        config.write_text(
            json.dumps({"clients": [client], "accounts_file": str(accounts)})
        )
        server = subprocess.Popen(
            [node, str(SCRIPT), str(config)],
            cwd=HERE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        try:
            yield Provider(issuer=_issuer(server), accounts=accounts)
        finally:
            server.terminate()
            server.wait(timeout=10)


def _issuer(server: subprocess.Popen[str]) -> str:
    """The line the script prints once it listens (its warnings come first)."""
    assert server.stdout is not None
    for line in server.stdout:
        if line.startswith("http://127.0.0.1:"):
            # Whatever it prints later must not fill the pipe and stall it.
            threading.Thread(target=server.stdout.read, daemon=True).start()
            return line.strip()
    raise AssertionError(f"the OpenID provider stopped ({server.wait()})")


def settings_for(provider: Provider, **changes: Any) -> OidcProvider:
    """Quiver's single sign-on, set to this provider as an operator would."""
    fields: dict[str, Any] = {
        "issuer": provider.issuer,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "scopes": ("openid", "email", "profile", "groups"),
        "groups_claim": "groups",
        "name": "Acme ID",
        "clock_skew_s": 60,
        "session_s": 8 * 3600,
        "timeout_s": 10,
    }
    return OidcProvider(**{**fields, **changes})
