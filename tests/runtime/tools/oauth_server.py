"""An OAuth-protected MCP server on loopback: a real token endpoint and a real MCP server that
checks every request's bearer token, in one process.

    python -m tests.runtime.tools.oauth_server PORT [--expires-in SECONDS]

- `POST /token`: the client credentials grant, client `agent-1` with secret `s3cret`,
  authenticated with HTTP Basic (client_secret_basic) or in the form (client_secret_post).
  Issues `tok-N`, valid `--expires-in` seconds (default 3600), with the scopes asked for.
- `POST /mcp`: the MCP endpoint. No, an unknown, revoked or expired token: 401 with a
  `WWW-Authenticate: Bearer error="invalid_token"` challenge; a token without the scope
  `tools:read`: 403 `insufficient_scope`. Tool `whoami` answers which token it was given.
- `POST /admin/revoke` revokes every token (as a restarted server forgets them);
  `POST /admin/refuse` makes the token endpoint refuse from then on;
  `GET /admin/stats` tells how many token requests came and what the last one held.
"""

from __future__ import annotations

import argparse
import base64
import json
import time
from typing import Any
from urllib.parse import parse_qsl, unquote

from mcp.server.mcpserver import Context, MCPServer

CLIENT_ID, CLIENT_SECRET = "agent-1", "s3cret"
CHALLENGE = 'Bearer realm="lab", error="{error}", resource_metadata="http://127.0.0.1/prm"'

server = MCPServer("guarded", log_level="WARNING")
tokens: dict[str, tuple[float, list[str]]] = {}  # token → (expires at, scopes)
stats: dict[str, Any] = {"token_requests": 0, "last": None, "refusing": False}
settings = {"expires_in": 3600.0}


@server.tool()
def whoami(ctx: Context) -> dict[str, Any]:
    """The bearer token this request carried, and its scopes."""
    token = (ctx.headers or {}).get("authorization", "").removeprefix("Bearer ")
    return {"token": token, "scopes": tokens.get(token, (0, []))[1]}


async def _send(send: Any, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    raw = json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    head += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": raw})


async def _body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _client(headers: dict[str, str], form: dict[str, str]) -> tuple[str, str, str]:
    """(client id, secret, how it was sent)."""
    basic = headers.get("authorization", "")
    if basic.startswith("Basic "):
        user, _, password = base64.b64decode(basic[6:]).decode().partition(":")
        return unquote(user), unquote(password), "client_secret_basic"
    return form.get("client_id", ""), form.get("client_secret", ""), "client_secret_post"


async def token_endpoint(scope: Any, receive: Any, send: Any) -> None:
    headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    form = dict(parse_qsl((await _body(receive)).decode()))
    client_id, secret, method = _client(headers, form)
    stats["token_requests"] += 1
    stats["last"] = {k: v for k, v in form.items() if k != "client_secret"} | {"auth": method}
    if form.get("grant_type") != "client_credentials":
        await _send(send, 400, {"error": "unsupported_grant_type"})
    elif stats["refusing"] or (client_id, secret) != (CLIENT_ID, CLIENT_SECRET):
        await _send(send, 401, {"error": "invalid_client", "error_description": "bad client"})
    else:
        token = f"tok-{stats['token_requests']}"
        lifetime = settings["expires_in"]
        tokens[token] = (time.time() + lifetime, form.get("scope", "").split())
        body = {"access_token": token, "token_type": "Bearer", "expires_in": lifetime}
        await _send(send, 200, body)


async def admin(scope: Any, receive: Any, send: Any) -> None:
    if scope["path"] == "/admin/revoke":
        tokens.clear()
    elif scope["path"] == "/admin/refuse":
        stats["refusing"] = True
    await _send(send, 200, stats)


def guarded(mcp_app: Any) -> Any:
    """The MCP app behind a bearer-token check."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await mcp_app(scope, receive, send)
            return
        path = scope["path"]
        if path == "/token":
            await token_endpoint(scope, receive, send)
            return
        if path.startswith("/admin/"):
            await admin(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        token = headers.get("authorization", "").removeprefix("Bearer ")
        expires, scopes = tokens.get(token, (0.0, []))
        if expires < time.time():
            challenge = CHALLENGE.format(error="invalid_token")
            await _send(send, 401, {"error": "invalid_token"}, {"www-authenticate": challenge})
        elif "tools:read" not in scopes:
            challenge = CHALLENGE.format(error="insufficient_scope") + ', scope="tools:read"'
            await _send(send, 403, {"error": "insufficient_scope"}, {"www-authenticate": challenge})
        else:
            await mcp_app(scope, receive, send)

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--expires-in", type=float, default=3600.0)
    args = parser.parse_args()
    settings["expires_in"] = args.expires_in
    app = guarded(server.streamable_http_app())
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
