"""`storage_read` / `storage_write`: text files in S3, confined to the agent's prefix.

Paths are relative to the prefix (default `storage/{agent}/`); anything that could escape it
(`..`, absolute paths, backslashes, control characters) is refused before S3 is touched.
"""

from __future__ import annotations

import re
from typing import Any

from runtime.tools.base import FunctionTool, ToolContext, ToolError

MAX_WRITE = 1_000_000
MAX_READ_CHARS = 200_000  # one page of a text file read with offset/limit
PRESIGNED_SECONDS = 3600  # how long a binary file's download link works
_SAFE = re.compile(r"^[A-Za-z0-9_.\-/ ]*$")


def _key(prefix: str, path: str) -> str:
    if not isinstance(path, str) or not _SAFE.match(path) or path.startswith("/"):
        raise ToolError(f"invalid path {path!r}: use a relative path of letters, digits, _ . - /")
    if any(part in {"..", "."} for part in path.split("/")):
        raise ToolError(f"invalid path {path!r}: '.' and '..' are not allowed")
    return prefix + path


def _whole(value: Any, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ToolError(f"{name} must be a whole number ≥ {low}")
    if high is not None and value > high:
        raise ToolError(f"{name} is at most {high}")
    return value


def storage_tools(prefix: str) -> list[FunctionTool]:
    async def read(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        path = arguments.get("path", "")
        offset = _whole(arguments.get("offset", 0), "offset", 0)
        if path == "" or path.endswith("/"):
            key = _key(prefix, path)
            limit = _whole(arguments.get("limit", 100), "limit", 1, 1000)
            listed = ctx.blobs.list(key, limit=offset + limit)[offset:]
            return [{"path": k[len(prefix) :], "size": size} for k, size in listed]
        key = _key(prefix, path)
        try:
            body = ctx.blobs.get(key)
        except KeyError:
            raise ToolError(f"no file {path!r}") from None
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:  # binary: a link the caller can download it with
            url = ctx.blobs.presign(key, PRESIGNED_SECONDS)
            return {"path": path, "size": len(body), "binary": True, "url": url,
                    "expires_in_seconds": PRESIGNED_SECONDS}  # fmt: skip
        if "offset" not in arguments and "limit" not in arguments:
            return text
        limit = _whole(arguments.get("limit", MAX_READ_CHARS), "limit", 1, MAX_READ_CHARS)
        part = text[offset : offset + limit]
        after = offset + len(part)
        return {"path": path, "content": part, "offset": offset, "total_chars": len(text),
                "next_offset": after if after < len(text) else None}  # fmt: skip

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
                "empty or ends with '/'. `offset`/`limit` page through a listing (entries) or a "
                "file (characters). A binary file answers with a download URL, not content."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 0},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_READ_CHARS},
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
