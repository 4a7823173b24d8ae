"""A real upstream MCP server that asks each caller for OAuth, built with the
official SDK's server authorization support (``mcp.server.auth``): it is both the
protected resource (RFC 9728 metadata, ``401`` with ``WWW-Authenticate: Bearer
resource_metadata=...``) and its authorization server (RFC 8414 metadata, RFC 7591
registration, the authorization code flow with PKCE S256, refresh with rotation,
RFC 7009 revocation), served by uvicorn on 127.0.0.1 in a thread of the test
process.

Its authorize endpoint sends the browser to its own sign-in page (``/login``),
where a person types the upstream account's name and approves, as a real
browser does in the e2e tests, or ``approve`` does it in a script. The tool
``whoami`` answers its caller's account, so a test sees whose token ran a call.

    with running_oauth_upstream() as server:
        server.url                 # http://127.0.0.1:<port>/mcp
        server.authority.refresh_requests
        server.authority.revoke_account("alice-up")
"""

from __future__ import annotations

import contextlib
import html
import json
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx2
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import (
    AuthSettings,
    ClientRegistrationOptions,
    RevocationOptions,
)
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_types import ToolAnnotations
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from tests.upstream import free_port

SCOPE = "notes"


@dataclass
class Authority(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """The authorization server's state, in memory: clients, codes, tokens,
    and what a test changes (expiry, refusing every token)."""

    issuer: str
    access_ttl: int = 3600
    # RFC 9207: the issuer in the authorization response (a test may make it lie).
    send_iss: bool = True
    iss_override: str = ""
    refuse_all: bool = False
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    waiting: dict[str, tuple[str, AuthorizationParams]] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    # Which refresh token each access token came with (revocation takes both).
    pairs: dict[str, str] = field(default_factory=dict)
    refresh_requests: int = 0
    code_exchanges: int = 0
    revoked: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        request_id = secrets.token_urlsafe(16)
        self.waiting[request_id] = (client.client_id, params)
        return f"{self.issuer}/login?" + urlencode({"request": request_id})

    def register_by_hand(self, client_id: str, secret: str, redirect_uri: str) -> None:
        """What an admin does at a server without dynamic registration."""
        self.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=secret,
            redirect_uris=[AnyUrl(redirect_uri)],
            token_endpoint_auth_method="client_secret_post",
            scope=SCOPE,
        )

    def approve(self, request_id: str, account: str) -> str:
        """The redirect back to the client after ``account`` approved."""
        client_id, params = self.waiting.pop(request_id)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=account,
        )
        iss = (self.iss_override or self.issuer) if self.send_iss else None
        return construct_redirect_uri(
            str(params.redirect_uri), code=code, state=params.state, iss=iss
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        with self.lock:
            if self.codes.pop(authorization_code.code, None) is None:
                raise TokenError("invalid_grant", "code already used")
            self.code_exchanges += 1
        found = authorization_code
        return self._issue(
            client.client_id, found.scopes, found.resource, found.subject
        )

    def _issue(
        self,
        client_id: str,
        scopes: list[str],
        resource: str | None,
        subject: str | None,
    ) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = int(time.time()) + self.access_ttl
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires,
            resource=resource,
            subject=subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh,
            client_id=client_id,
            scopes=scopes,
            resource=resource,
            subject=subject,
        )
        self.pairs[access] = refresh
        return OAuthToken(
            access_token=access,
            expires_in=self.access_ttl,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        if found is None or found.client_id != client.client_id:
            return None
        return found

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: RefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        with self.lock:
            self.refresh_requests += 1
            if self.refresh.pop(refresh_token.token, None) is None:
                raise TokenError("invalid_grant", "refresh token already used")
        await anyio.sleep(0.2)  # in flight long enough for a second to overlap
        return self._issue(
            client.client_id,
            scopes or refresh_token.scopes,
            refresh_token.resource,
            refresh_token.subject,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        if self.refuse_all:
            return None
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.revoked.append(token.token)
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)
        for access, refresh in list(self.pairs.items()):
            if token.token in (access, refresh):
                self.access.pop(access, None)
                self.refresh.pop(refresh, None)

    def revoke_account(self, account: str) -> None:
        """What an upstream admin does: every token of ``account`` stops."""
        for token, access in list(self.access.items()):
            if access.subject == account:
                del self.access[token]
        for token, refresh in list(self.refresh.items()):
            if refresh.subject == account:
                del self.refresh[token]

    def expire_access(self, account: str) -> None:
        """Every access token of ``account`` expires now (refresh tokens stay)."""
        for token, grant in list(self.access.items()):
            if grant.subject == account:
                self.access[token] = grant.model_copy(update={"expires_at": 1})

    def tokens_of(self, account: str) -> list[str]:
        return [t for t, grant in self.access.items() if grant.subject == account]


@dataclass
class OAuthUpstream:
    url: str
    issuer: str
    authority: Authority
    # Whose tokens reached the tool (the account), in order.
    callers: list[str] = field(default_factory=list)

    def approve(self, authorize_url: str, account: str) -> str:
        """A person's sign-in and approval at this server, scripted: follow the
        authorization URL to the sign-in page and approve as ``account``;
        returns where the server sends the browser back (Quiver's callback)."""
        with httpx2.Client(follow_redirects=False, timeout=10) as http:
            login = http.get(authorize_url)
            assert login.status_code == 302, login.text
            location = login.headers["location"]
            request_id = location.split("request=", 1)[1]
            back = http.post(
                f"{self.issuer}/login",
                data={"request": request_id, "account": account},
            )
            assert back.status_code == 302, back.text
            return str(back.headers["location"])


def _server(upstream: OAuthUpstream, registration: bool = True) -> MCPServer:
    authority = upstream.authority
    server = MCPServer(
        "oauth-upstream",
        version="1",
        auth_server_provider=authority,
        auth=AuthSettings(
            issuer_url=upstream.issuer,  # type: ignore[arg-type]
            resource_server_url=upstream.url,  # type: ignore[arg-type]
            validate_token_resource=True,
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=registration, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @server.tool(
        description="Who the caller is at this server: its account.",
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    def whoami() -> dict[str, Any]:
        token = get_access_token()
        account = token.subject if token is not None else None
        upstream.callers.append(str(account))
        return {"account": account}

    @server.tool(description="Add a note to the caller's notebook.")
    def add_note(text: str) -> str:
        token = get_access_token()
        return f"noted for {token.subject if token else None}: {text}"

    @server.custom_route("/login", methods=["GET", "POST"])
    async def login(request: Request) -> Response:
        if request.method == "GET":
            request_id = html.escape(request.query_params.get("request", ""))
            return HTMLResponse(LOGIN_PAGE.format(request=request_id))
        form = await request.form()
        request_id, account = str(form["request"]), str(form["account"])
        if request_id not in authority.waiting or not account:
            return HTMLResponse("no such sign-in", status_code=400)
        return RedirectResponse(authority.approve(request_id, account), 302)

    return server


LOGIN_PAGE = """<!doctype html><title>Sign in to the notes server</title>
<h1>Sign in to the notes server</h1>
<form method="post" action="/login">
<input type="hidden" name="request" value="{request}">
<label>Account <input name="account" autocomplete="off"></label>
<button type="submit">Allow Quiver</button>
</form>"""


@contextlib.contextmanager
def running_oauth_upstream(
    access_ttl: int = 3600, registration: bool = True
) -> Iterator[OAuthUpstream]:
    """Serve a fresh OAuth-protected upstream until the block ends (without
    dynamic registration: an admin registers clients by hand)."""
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    upstream = OAuthUpstream(
        url=f"{issuer}/mcp",
        issuer=issuer,
        authority=Authority(issuer=issuer, access_ttl=access_ttl),
    )
    app = _server(upstream, registration).streamable_http_app(
        json_response=True,
        stateless_http=True,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=False
        ),
    )
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="oauth-upstream", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the OAuth upstream MCP server did not start")
        time.sleep(0.02)
    try:
        yield upstream
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@dataclass
class Documents:
    """A server of OAuth documents a test writes (to lie in ways a real
    authorization server would not): ``docs`` maps a path to its JSON; every
    request to /mcp is answered 401 with ``challenge``."""

    base: str = ""
    docs: dict[str, Any] = field(default_factory=dict)
    challenge: str = ""

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"


def _documents_app(documents: Documents) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == "/mcp":
            headers = [(b"www-authenticate", documents.challenge.encode())]
            await send(
                {"type": "http.response.start", "status": 401, "headers": headers}
            )
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        found = documents.docs.get(path)
        status, body = (200, found) if found is not None else (404, b"not found")
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        kind = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": kind})
        await send({"type": "http.response.body", "body": body})

    return app


@contextlib.contextmanager
def running_documents() -> Iterator[Documents]:
    """Serve a fresh ``Documents`` until the block ends."""
    port = free_port()
    documents = Documents(base=f"http://127.0.0.1:{port}")
    config = uvicorn.Config(
        _documents_app(documents), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="oauth-documents", daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the documents server did not start")
        time.sleep(0.02)
    try:
        yield documents
    finally:
        server.should_exit = True
        thread.join(timeout=10)
