"""Quiver as an OAuth 2.1 authorization server, on authlib's Django integration.

The authorization code grant with PKCE (S256 only) and rotated refresh tokens, no
other grant; RFC 7591 registration, RFC 7009 revocation, RFC 9068 JWT access tokens
whose ``aud`` is the one resource served (the /mcp URL), the issuer named in every
authorization response (RFC 9207). One server is built per request; what a request
found rides on authlib's request as ``quiver``, so a refusal is recorded against its
connection and a guess costs its address as an unknown API key does.
The rules: docs/explanation/security.md, OAuth.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from authlib.common.urls import add_params_to_uri
from authlib.integrations.django_oauth2 import AuthorizationServer
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    JsonPayload,
    JsonRequest,
    OAuth2Request,
)
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, RefreshTokenGrant
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError
from authlib.oauth2.rfc7636 import CodeChallenge
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from config.http import client_address, request_id
from identity.auth import key_problem
from oauth.metadata import issuer_url, resource_url
from oauth.models import AuthorizationCode, Connection, OAuthClient, RefreshToken
from oauth.registry import ClientProblem, checked_metadata, find_client
from oauth.scopes import read_scope, scope_problem
from oauth.services.clients import new_client_id, register_client
from oauth.services.connections import client_record
from oauth.services.grants import (
    claim_code,
    claim_refresh_token,
    find_code,
    find_refresh_token,
    revoke_access_token,
    revoke_family,
    save_code,
    save_refresh_token,
    start_family,
)
from oauth.services.refusals import record_refusal
from oauth.tokens import AccessTokens, Grantee, TokenRefused, header_of, is_own
from oauth.tokens import read_own as read_access_token

REPLAYED = "code: used before; the tokens issued for it are revoked"
REUSED = "refresh_token: used before; every token of its grant is revoked"


class InvalidTargetError(OAuth2Error):
    """RFC 8707: the resource asked for is not one this server issues for."""

    error = "invalid_target"


@dataclass
class Found:
    """What one OAuth request found, for its audit row."""

    connection: Connection | None = None
    person: Any = None  # the signed-in person at the authorization endpoint
    client: OAuthClient | None = None
    guessed: bool = False  # an unknown code or refresh token
    reason: str = ""


def found(request: OAuth2Request) -> Found:
    return request.quiver  # type: ignore[attr-defined,no-any-return]


class S256Only(CodeChallenge):
    """PKCE with S256, always: no challenge, or ``plain``, is refused."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("code_challenge: required (PKCE with S256)")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError(
                "code_challenge_method: S256 only (plain is refused)"
            )
        super().validate_code_challenge(grant, redirect_uri)


class CodeGrant(AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]

    def validate_authorization_request(self) -> str:
        redirect_uri: str = super().validate_authorization_request()
        try:
            self.server.check_resource(self.request, self.server.resource)
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri
            raise
        return redirect_uri

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        grantee: Grantee = request.user
        data = request.payload.data
        save_code(
            code,
            grantee.connection,
            redirect_uri=request.payload.redirect_uri or "",
            scope=read_scope(request.scope).endpoint_scope,
            resource=self.server.resource,
            challenge=str(data.get("code_challenge")),
            method=str(data.get("code_challenge_method")),
        )

    def query_authorization_code(
        self, code: str, client: OAuthClient
    ) -> AuthorizationCode | None:
        note = found(self.request)
        row = find_code(code)
        if row is None:
            note.guessed = True
            return None
        note.connection = row.connection
        if not claim_code(row):
            note.reason = REPLAYED
            if row.family is not None:
                revoke_family(row.family, reason="code replayed", actor=_principal(row))
            return None
        if row.connection.client_id != client.pk:
            note.reason = "code: issued to another client"
            return None
        if row.expires <= timezone.now():
            note.reason = "code: expired"
            return None
        return row

    def delete_authorization_code(self, authorization_code: Any) -> None:
        """Nothing: the code was marked used when it was claimed."""

    def authenticate_user(self, authorization_code: AuthorizationCode) -> Any:
        connection = authorization_code.connection
        problem = _connection_problem(connection)
        if problem:
            found(self.request).reason = problem
            return None
        return Grantee(connection, start_family(authorization_code))

    def validate_token_request(self) -> None:
        super().validate_token_request()
        code: AuthorizationCode = self.request.authorization_code
        asked = self.request.payload.redirect_uri
        if asked and code.redirect_uri and asked != code.redirect_uri:
            raise InvalidGrantError("redirect_uri: not the one the code was sent to")
        self.server.check_resource(self.request, code.resource)

    def create_token_response(self) -> Any:
        with transaction.atomic():
            return super().create_token_response()


class RefreshGrant(RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> RefreshToken | None:
        note = found(self.request)
        row = find_refresh_token(refresh_token)
        if row is None:
            note.guessed = True
            return None
        family = row.family
        note.connection = family.connection
        if not claim_refresh_token(row):
            note.reason = REUSED
            revoke_family(family, reason="refresh token reused", actor=_principal(row))
            return None
        if family.revoked is not None:
            note.reason = f"refresh_token: revoked ({family.revoked_reason})"
            return None
        if row.expires <= timezone.now():
            note.reason = "refresh_token: expired"
            return None
        return row

    def authenticate_user(self, refresh_token: RefreshToken) -> Any:
        connection = refresh_token.family.connection
        problem = _connection_problem(connection)
        if problem:
            found(self.request).reason = problem
            return None
        return Grantee(connection, refresh_token.family)

    def validate_token_request(self) -> None:
        super().validate_token_request()
        row: RefreshToken = self.request.refresh_token
        self.server.check_resource(self.request, row.family.resource)

    def revoke_old_credential(self, refresh_token: Any) -> None:
        """Nothing: the token was marked used when it was claimed."""

    def create_token_response(self) -> Any:
        with transaction.atomic():
            return super().create_token_response()


class _AccessTokenRecord:
    """An access token presented for revocation (its signature verified)."""

    def __init__(self, claims: dict[str, Any], connection: Connection) -> None:
        self.claims = claims
        self.connection = connection

    def check_client(self, client: OAuthClient) -> bool:
        return bool(self.connection.client_id == client.pk)


class Revocation(RevocationEndpoint):
    """RFC 7009: a client revokes its refresh token (the whole grant) or an
    access token (that token); an unknown token is answered 200 alike."""

    CLIENT_AUTH_METHODS = ["none"]

    def query_token(self, token_string: str, token_type_hint: str | None) -> Any:
        if token_type_hint != "refresh_token":
            record = _access_token_record(token_string, self.server)
            if record is not None or token_type_hint == "access_token":
                return record
        return find_refresh_token(token_string)

    def revoke_token(self, token: Any, request: OAuth2Request) -> None:
        if isinstance(token, _AccessTokenRecord):
            expires = datetime.fromtimestamp(int(token.claims["exp"]), tz=UTC)
            revoke_access_token(
                str(token.claims["jti"]), expires, connection=token.connection
            )
            return
        revoke_family(
            token.family,
            reason="revoked by its client (RFC 7009)",
            actor=_principal(token),
        )


class Registration(ClientRegistrationEndpoint):
    """RFC 7591, open to anyone (nothing is granted until a person approves the
    client), limited per address by the view."""

    def authenticate_token(self, request: Any) -> bool:
        return True

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        data = request.payload.data
        if not isinstance(data, dict) or not data:
            raise InvalidClientMetadataError("the body is a JSON object of metadata")
        try:
            return checked_metadata(data)
        except ClientProblem as exc:
            raise InvalidClientMetadataError(str(exc)) from exc

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        """An id and when it was issued; no secret (public clients)."""
        return {"client_id": new_client_id(), "client_id_issued_at": int(time.time())}

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any
    ) -> OAuthClient:
        http: HttpRequest = self.server.http_request
        return register_client(
            client_info["client_id"],
            client_metadata,
            address=client_address(http),
            request_id=request_id(http),
        )

    def get_server_metadata(self) -> dict[str, Any]:
        return {}


class _Parsed(JsonPayload):
    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def data(self) -> Any:
        return self._data


class QuiverServer(AuthorizationServer):
    """authlib's Django server, for one request (its issuer and resource)."""

    def __init__(self, http_request: HttpRequest, json_body: Any = None) -> None:
        super().__init__(OAuthClient, None)
        self.http_request = http_request
        self.json_body = json_body
        self.issuer = issuer_url(http_request)
        self.resource = resource_url(http_request)
        self.register_token_generator("default", AccessTokens(self.issuer))
        self.register_grant(CodeGrant, [S256Only(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)
        self.register_endpoint(Registration)
        self.last_found: Found | None = None

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        oauth_request = super().create_oauth2_request(request)
        oauth_request.quiver = self.last_found = Found()  # type: ignore[attr-defined]
        return oauth_request

    def create_json_request(self, request: Any) -> JsonRequest:
        json_request = JsonRequest(
            request.method, request.build_absolute_uri(), request.headers
        )
        json_request.payload = _Parsed(self.json_body)
        json_request.quiver = Found()  # type: ignore[attr-defined]
        return json_request

    def query_client(self, client_id: str) -> OAuthClient | None:
        try:
            return find_client(client_id)
        except ClientProblem as exc:
            raise InvalidClientError(description=str(exc)) from exc

    def validate_requested_scope(self, scope: str | None) -> None:
        problem = scope_problem(scope)
        if problem:
            raise InvalidScopeError(problem)

    def check_resource(self, request: OAuth2Request, allowed: str) -> None:
        """RFC 8707: a ``resource`` named must be the one the grant is for."""
        asked = request.payload.datalist.get("resource", [])
        if len(asked) > 1 or (asked and asked[0] != allowed):
            raise InvalidTargetError(
                description=f"resource: this server issues tokens for {allowed} only"
            )

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        grantee: Grantee = request.user
        assert grantee.family is not None
        if token.get("refresh_token"):
            save_refresh_token(str(token["refresh_token"]), grantee.family)

    def handle_response(self, status: int, body: Any, headers: Any) -> HttpResponse:
        headers = list(headers)
        for index, (name, value) in enumerate(headers):
            if name.lower() == "location":  # every authorization response: RFC 9207
                headers[index] = (name, add_params_to_uri(value, {"iss": self.issuer}))
        return super().handle_response(status, body, headers)

    def handle_error_response(self, request: Any, error: OAuth2Error) -> HttpResponse:
        note: Found | None = getattr(request, "quiver", None)
        if note is not None and note.reason and error.error == "invalid_grant":
            error.description = note.reason
        if note is not None:
            self.record(note, error)
        return super().handle_error_response(request, error)

    def record(self, note: Found, error: OAuth2Error) -> None:
        """The refusal's audit row, when it concerns someone."""
        connection = note.connection
        actor = connection.principal.user if connection is not None else note.person
        if actor is None:
            return
        client = connection.client if connection is not None else note.client
        record_refusal(
            str(error.error),
            str(error.description or error.error),
            actor=actor,
            where=self.http_request.path,
            request_id=request_id(self.http_request),
            client=client_record(client) if client is not None else None,
        )

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """authlib's Django signals: nothing listens."""


def _principal(row: Any) -> Any:
    """The service user a code's or refresh token's connection acts as."""
    connection = row.connection if hasattr(row, "connection") else row.family.connection
    return connection.principal.user


def _connection_problem(connection: Connection) -> str:
    if connection.revoked is not None:
        return "grant: the connection was revoked"
    problem = key_problem(connection.principal)
    return f"grant: the connection is {problem}" if problem else ""


def _access_token_record(token: str, server: QuiverServer) -> _AccessTokenRecord | None:
    """An access token of this server, whatever its expiry or audience."""
    header = header_of(token)
    if header is None or not is_own(header):
        return None
    try:
        info = read_access_token(token, issuer=server.issuer, resource=server.resource)
    except TokenRefused:
        return None
    return _AccessTokenRecord(info.claims, info.connection)
