"""`session_cache_list` and `session_cache_get`: the model's view of the tool-output cache.

Full outputs of MCP, HTTP and Lambda tools (and any output too long for the context) are kept
in S3 under `tool-cache/{agent}/{session}/{run}/{call id}`. The model sees a preview and an
id; these tools let it list what the session has fetched and page through a full output
instead of calling an expensive tool again. What they page is the text the model read the
preview of, character for character, so `offset` N continues a preview of N characters
exactly. Entries come from the session's own history, so a run can only ever read its own
session's outputs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from runtime.events import preview
from runtime.tools.base import FunctionTool, ToolContext, ToolError

PAGE_DEFAULT = 10_000
PAGE_MAX = 50_000


_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")


def _run_key(ctx: ToolContext, call_id: str) -> str | None:
    """Where this run keeps the output of one of its calls (None for an id that is not one)."""
    if not _SAFE_ID.match(call_id) or ctx.blobs is None:
        return None
    return ToolContext(ctx.run_id, ctx.session_id, ctx.agent, call_id).cache_key


def _entries(ctx: ToolContext) -> list[Any]:
    if ctx.session_outputs is None:
        return []
    return [m for m in ctx.session_outputs() if m.full_output_ref]


async def _list(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    return [
        {
            "id": m.tool_call_id,
            "tool": m.tool_name,
            "arguments": preview(json.dumps(m.inputs, ensure_ascii=False, default=str), 200),
            "size": m.full_size,
            "success": m.success,
            "at": m.at,
        }
        for m in _entries(ctx)
    ]


async def _get(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    wanted = str(arguments["id"])
    entry = next((m for m in _entries(ctx) if m.tool_call_id == wanted), None)
    # An output pruned from the context (runtime.engine.compaction) is kept under this run's
    # own prefix by its id, also when its message is before the summary and not loaded.
    ref = entry.full_output_ref if entry is not None else _run_key(ctx, wanted)
    try:
        body = ctx.blobs.get(ref).decode("utf-8", errors="replace") if ref else None
    except KeyError as exc:
        if entry is None:
            body = None
        else:
            raise ToolError(f"the cached output {wanted!r} has expired") from exc
    if body is None:
        raise ToolError(
            f"no cached output with id {wanted!r} in this session; see session_cache_list"
        )
    offset = max(0, int(arguments.get("offset", 0)))
    wanted_length = arguments.get("limit", arguments.get("length", PAGE_DEFAULT))
    length = min(PAGE_MAX, max(1, int(wanted_length)))
    chunk = body[offset : offset + length]
    end = offset + len(chunk)
    return {
        "id": wanted,
        "tool": entry.tool_name if entry is not None else None,
        "offset": offset,
        "length": len(chunk),
        "total": len(body),
        "next_offset": end if end < len(body) else None,
        "content": chunk,
    }


def session_cache_tools() -> list[FunctionTool]:
    return [
        FunctionTool(
            name="session_cache_list",
            description=(
                "List the tool outputs this conversation has already fetched and cached: id, "
                "tool, arguments, size. Reuse them instead of calling the tool again."
            ),
            input_schema={"type": "object", "properties": {}},
            func=_list,
        ),
        FunctionTool(
            name="session_cache_get",
            description=(
                "Read a cached tool output by id, a page at a time: offset and limit (or "
                f"length) are in characters (at most {PAGE_MAX}); next_offset says where to "
                "continue."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1, "maximum": PAGE_MAX},
                    "length": {"type": "integer", "minimum": 1, "maximum": PAGE_MAX},
                },
                "required": ["id"],
            },
            func=_get,
        ),
    ]
