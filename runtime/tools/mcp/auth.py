"""OAuth 2 client credentials for hosted MCP servers (machine to machine).

An agent is a serverless function with nobody at a browser, so the interactive flows
(authorization code, dynamic registration, consent pages) have no place here; the grant an
unattended service has is `client_credentials`. The token endpoint is named in the spec and
the secret comes from `${secret:NAME}`: agentfn never sends its client secret wherever a
server's metadata points (the MCP SDK itself is deprecating that discovery-only mode).

A token is kept per warm container (keyed by everything that shapes it, the secret's value
included, so a rotated secret gets a new token) and reused by later runs until shortly
before it expires; a 401 from the server drops it and the request is retried once with a
fresh token. Every token is remembered for redaction, like a resolved secret.

Imported only when a server with `oauth` connects (it needs the SDK's HTTP client, httpx2).
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import anyio
import httpx2

from runtime.spec.plain import McpOAuth
from runtime.tools.mcp.errors import TokenRefused

#: A token is renewed when less than this share of its life (at most 60 s) is left.
RENEW_MARGIN = 0.1


@dataclass(frozen=True)
class _Token:
    value: str
    renew_at: float | None  # None: no expires_in, kept until the server answers 401


_TOKENS: dict[str, _Token] = {}  # per warm container, shared by every run and thread
_TOKENS_LOCK = threading.Lock()


def forget_tokens() -> None:
    """Drop every cached token (tests)."""
    with _TOKENS_LOCK:
        _TOKENS.clear()


class ClientCredentials(httpx2.Auth):
    """An httpx2 auth flow: a bearer token from the token endpoint on every request.

    Built per connection; the token cache behind it is per container. Token requests go
    through their own short-lived client, so the MCP server's headers never reach the
    authorization server.
    """

    def __init__(
        self,
        oauth: McpOAuth,
        server_url: str,
        secrets: Callable[[str], str],
        timeout: float,
        clock: Callable[[], float] = time.time,
    ):
        self._oauth = oauth
        self._resource = oauth.resource or server_url
        self._secret = secrets(oauth.client_secret)
        self._timeout = timeout
        self._clock = clock
        self._lock: anyio.Lock | None = None  # created in the connection's event loop
        shape = [str(oauth.token_url), oauth.client_id, self._secret, oauth.auth_method]
        shape += [" ".join(oauth.scopes), self._resource]
        self._key = hashlib.sha256("\0".join(shape).encode()).hexdigest()
        #: Why the token endpoint last refused (None once it issues a token): the SDK turns
        #: an exception raised in an auth flow into a bare JSON-RPC error.
        self.refused: str | None = None

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._token()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code != 401:
            return
        self._drop(token)  # expired early, revoked, or the server restarted: once more
        request.headers["Authorization"] = f"Bearer {await self._token()}"
        yield request

    async def _token(self) -> str:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:  # concurrent requests of one connection: one token request
            cached = _TOKENS.get(self._key)
            if cached is not None and (cached.renew_at is None or cached.renew_at > self._clock()):
                return cached.value
            try:
                token = await self._request_token()
            except TokenRefused as exc:
                self.refused = str(exc)
                raise
            self.refused = None
            with _TOKENS_LOCK:
                _TOKENS[self._key] = token
            return token.value

    def _drop(self, value: str) -> None:
        with _TOKENS_LOCK:
            if (cached := _TOKENS.get(self._key)) is not None and cached.value == value:
                del _TOKENS[self._key]

    async def _request_token(self) -> _Token:
        from runtime.secrets import remember

        oauth = self._oauth
        form = {"grant_type": "client_credentials", "resource": self._resource}
        if oauth.scopes:
            form["scope"] = " ".join(oauth.scopes)
        headers = {"Accept": "application/json"}
        if oauth.auth_method == "client_secret_basic":  # RFC 6749 §2.3.1: form-encode first
            pair = f"{quote(oauth.client_id, safe='')}:{quote(self._secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form |= {"client_id": oauth.client_id, "client_secret": self._secret}
        started = self._clock()
        try:
            async with httpx2.AsyncClient(timeout=self._timeout, follow_redirects=False) as http:
                response = await http.post(str(oauth.token_url), data=form, headers=headers)
        except httpx2.HTTPError as exc:
            raise TokenRefused(f"token endpoint unreachable: {type(exc).__name__}: {exc}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code != 200 or not isinstance(body, dict):
            raise TokenRefused(_refusal(response.status_code, body))
        value, kind = body.get("access_token"), str(body.get("token_type", ""))
        if not isinstance(value, str) or not value or kind.lower() != "bearer":
            raise TokenRefused(
                f"the token endpoint answered without a bearer access_token (token_type "
                f"{kind or 'missing'!r})"
            )
        remember(value)  # redacted wherever it might be echoed, like a secret
        lifetime = body.get("expires_in")
        if not isinstance(lifetime, int | float) or isinstance(lifetime, bool) or lifetime <= 0:
            return _Token(value, None)
        return _Token(value, started + lifetime - min(60.0, lifetime * RENEW_MARGIN))


def _refusal(status: int, body: Any) -> str:
    """`token endpoint refused the client credentials: HTTP 401 invalid_client (…)`."""
    line = f"the token endpoint refused the client credentials: HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        line += f" {body['error'][:100]}"
        if isinstance(body.get("error_description"), str):
            line += f" ({body['error_description'][:200]})"
    return line
