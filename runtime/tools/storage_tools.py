"""`storage_read` / `storage_write`: text files in S3, confined to the agent's prefix.

Paths are relative to the prefix (default `storage/{agent}/`); anything that could escape it
(`..`, absolute paths, backslashes, control characters) is refused before S3 is touched.
"""

from __future__ import annotations

import re
from typing import Any

from runtime.tools.base import FunctionTool, ToolContext, ToolError

MAX_WRITE = 1_000_000
_SAFE = re.compile(r"^[A-Za-z0-9_.\-/ ]*$")


def _key(prefix: str, path: str) -> str:
    if not isinstance(path, str) or not _SAFE.match(path) or path.startswith("/"):
        raise ToolError(f"invalid path {path!r}: use a relative path of letters, digits, _ . - /")
    if any(part in {"..", "."} for part in path.split("/")):
        raise ToolError(f"invalid path {path!r}: '.' and '..' are not allowed")
    return prefix + path


def storage_tools(prefix: str) -> list[FunctionTool]:
    async def read(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        path = arguments.get("path", "")
        if path == "" or path.endswith("/"):
            key = _key(prefix, path)
            limit = int(arguments.get("limit", 100))
            listed = ctx.blobs.list(key, limit=limit)
            return [{"path": k[len(prefix) :], "size": size} for k, size in listed]
        try:
            body = ctx.blobs.get(_key(prefix, path))
        except KeyError:
            raise ToolError(f"no file {path!r}") from None
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not UTF-8 text ({len(body)} bytes)") from None

    async def write(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        path, content = arguments["path"], arguments["content"]
        if not path or path.endswith("/"):
            raise ToolError("path must name a file")
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE:
            raise ToolError(f"content is {len(data)} bytes; at most {MAX_WRITE} can be written")
        ctx.blobs.put(_key(prefix, path), data, "text/plain; charset=utf-8")
        return {"path": path, "size": len(data)}

    return [
        FunctionTool(
            name="storage_read",
            description=(
                "Read a UTF-8 text file from this agent's storage, or list files when path is "
                "empty or ends with '/'."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                },
            },
            func=read,
        ),
        FunctionTool(
            name="storage_write",
            description="Write a UTF-8 text file to this agent's storage (replaces it).",
            input_schema={
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
            func=write,
            effect="idempotent",
        ),
    ]
