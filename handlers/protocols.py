"""The open protocols' routes on the API function (runtime.routes.PROTOCOL_ROUTES): A2A
under /a2a/{agent} (handlers.a2a), MCP at /mcp (handlers.mcp). Same function, same stage,
so the same auth as the REST routes (IAM, or the stage's authorizer) guards them; each
imports its SDK only when a request of its own comes."""

from __future__ import annotations

from typing import Any

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


def protocol_answer(event: dict[str, Any], context: Any) -> dict[str, Any] | None:
    """The answer when the request is for a protocol route, else None (a REST route)."""
    resource = str(event.get("resource") or "")
    if resource.startswith("/a2a/"):
        from handlers.a2a import handle as a2a

        return a2a(event, context)
    if resource == "/mcp":
        from handlers.mcp import handle as mcp

        return mcp(event, context)
    return None


def header(event: dict[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if str(key).lower() == name.lower():
            return str(value)
    return None


def public_base(event: dict[str, Any]) -> tuple[str, bool]:
    """The URL the caller reached this API at (up to the stage), and whether it is
    `agentfn dev` on loopback (no stage in its paths; it can stream). Deployed, the stage
    (or a custom domain's base path) is what requestContext.path has before the path."""
    context = event.get("requestContext") or {}
    host = header(event, "Host") or str(context.get("domainName") or "")
    if host.rsplit(":", 1)[0] in LOOPBACK_HOSTS or host.startswith("[::1]"):
        return f"http://{host}", True
    full, path = str(context.get("path") or ""), str(event.get("path") or "")
    prefix = full[: -len(path)] if path and full.endswith(path) else ""
    return f"https://{context.get('domainName') or host}{prefix}", False


def json_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    import json

    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": json.dumps(body, separators=(",", ":")),
        "isBase64Encoded": False,
    }
