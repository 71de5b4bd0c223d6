"""The MCP tool results agents and workflows share (runtime.protocols.mcp_server and
mcp_workflows): a refusal, and a finished run's answer — its text, and an object answer as
structured content as well."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def answered(answer: Any, ids: dict[str, Any]) -> types.CallToolResult:
    """A succeeded run's answer (`ids` say which run, in the result's `_meta`)."""
    text = answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=answer if isinstance(answer, dict) else None,
        meta={"agentfn": ids},
    )
