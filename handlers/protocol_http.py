"""What the protocol handlers (handlers.a2a, handlers.mcp) share about the HTTP request and
answer: a header, the public base URL the caller used, a JSON proxy answer."""

from __future__ import annotations

from typing import Any

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})


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
