"""The open protocols' routes on the API function (runtime.routes.PROTOCOL_ROUTES): A2A
under /a2a/{agent} (handlers.a2a), MCP at /mcp (handlers.mcp). Same function, same stage,
so the same auth as the REST routes (IAM, or the stage's authorizer) guards them; each
imports its SDK only when a request of its own comes."""

from __future__ import annotations

from typing import Any


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
