"""MCP on the API function: POST /mcp, the official SDK's streamable HTTP transport in its
stateless JSON-response mode (runtime.protocols.mcp_server), driven by one API Gateway
event: the SDK's transport is an ASGI app, so the event becomes one ASGI request and the
answer is what the app sent. The SDK is imported on the first MCP request only."""

from __future__ import annotations

import base64
from collections.abc import MutableMapping
from typing import Any


def handle(event: dict[str, Any], context: Any) -> dict[str, Any]:
    import asyncio

    return asyncio.run(_serve(event, context))


def _scope(event: dict[str, Any]) -> dict[str, Any]:
    headers = [
        (str(name).lower().encode("latin-1"), str(value).encode("latin-1"))
        for name, value in (event.get("headers") or {}).items()
    ]
    source = ((event.get("requestContext") or {}).get("identity") or {}).get("sourceIp") or ""
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": str(event.get("httpMethod") or "POST"),
        "scheme": "https",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "server": ("agentfn", 443),
        "client": (source, 0),
    }


def _body(event: dict[str, Any]) -> bytes:
    raw = event.get("body") or ""
    return base64.b64decode(raw) if event.get("isBase64Encoded") else str(raw).encode()


async def _serve(event: dict[str, Any], context: Any) -> dict[str, Any]:
    import anyio
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from handlers.api_requests import time_left
    from handlers.api_service import the_service
    from runtime.protocols.mcp_server import build_server

    server = build_server(the_service(), time_left=time_left(context))
    manager = StreamableHTTPSessionManager(server, json_response=True, stateless=True)
    body, answered, delivered = _body(event), anyio.Event(), False
    status, headers, chunks = 500, [], []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the caller stays until the answer is whole
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = int(message["status"]), list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body") or b""))
            if not message.get("more_body"):
                answered.set()

    async with manager.run():
        await manager.handle_request(_scope(event), receive, send)
    multi: dict[str, list[str]] = {}
    for name, value in headers:
        multi.setdefault(name.decode("latin-1"), []).append(value.decode("latin-1"))
    payload = b"".join(chunks)
    try:
        text, encoded = payload.decode("utf-8"), False
    except UnicodeDecodeError:
        text, encoded = base64.b64encode(payload).decode("ascii"), True
    return {
        "statusCode": status,
        "multiValueHeaders": multi,
        "body": text,
        "isBase64Encoded": encoded,
    }
