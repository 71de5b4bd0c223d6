"""A `tools/call` result as the engine keeps it: text for the model, images for the models
that accept them, and everything (base64 data, structured content) for the cache."""

from __future__ import annotations

import base64
import json
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from runtime.tools.base import RichOutput, ToolImage

if TYPE_CHECKING:
    from mcp_types import CallToolResult


def to_rich_output(result: CallToolResult) -> RichOutput:
    """Text the model can read for every content block (an image keeps a placeholder, so a
    model without image input still knows it is there); ImageContent also becomes an image
    of the result. An `isError` result stays an error (success=false), whatever it holds."""
    import mcp_types as mt

    parts: list[str] = []
    images: list[ToolImage] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            parts.append(block.text)
        elif isinstance(block, mt.ImageContent | mt.AudioContent):
            try:
                size = len(base64.b64decode(block.data, validate=True))
            except ValueError:  # binascii.Error included: not base64, so not sent on
                size = len(block.data) * 3 // 4
            else:
                if isinstance(block, mt.ImageContent):
                    images.append(ToolImage(mime_type=block.mime_type, data=block.data))
            parts.append(f"[{block.type}: {block.mime_type}, {size} bytes]")
        elif isinstance(block, mt.EmbeddedResource):
            res = block.resource
            if isinstance(res, mt.TextResourceContents):
                parts.append(res.text)
            else:
                parts.append(f"[resource {res.uri}, {res.mime_type or 'unknown type'}]")
        elif isinstance(block, mt.ResourceLink):
            parts.append(f"[resource link: {block.uri}]")
    text = "\n".join(parts)
    structured = result.structured_content
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
    wire = [
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    ]
    full: dict[str, Any] = {"content": wire}
    if structured is not None:
        full["structuredContent"] = structured
    elif text[:1] in ("{", "["):
        with suppress(ValueError):
            full["json"] = json.loads(text)
    if result.is_error:
        full["isError"] = True
    placeholder = "(the tool reported an error)" if result.is_error else "(no content)"
    return RichOutput(
        text=text or placeholder, full=full, is_error=bool(result.is_error), images=images
    )
