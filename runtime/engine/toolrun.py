"""Execute one tool call and turn whatever happens into a ToolResultMessage.

Nothing a tool or a model does here can crash the run: unknown tools, arguments that are
not JSON or do not match the schema, exceptions and timeouts all become error results
(success=false) the model can read and react to.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from runtime.jsontext import writer
from runtime.messages import ImagePart, ToolCall, ToolResultMessage
from runtime.safety.schema_check import SchemaViolation, check
from runtime.store.base import BlobStore
from runtime.tools.base import RichOutput, Tool, ToolContext, ToolError

INLINE_OUTPUT_BYTES = 8 * 1024
#: Characters of an output over INLINE_OUTPUT_BYTES that the result contract shows.
INLINE_PREVIEW_CHARS = 2000


def error_result(
    call: ToolCall, turn: int, message: str, duration_ms: int = 0
) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=f"Error: {message}",
        success=False,
        inputs=call.arguments,
        output={"error": message},
        duration_ms=duration_ms,
        turn=turn,
    )


def answered_result(
    call: ToolCall, turn: int, answer: Any, at: float, child_run_id: str | None = None
) -> ToolResultMessage:
    """A sub-agent's answer (an asked child run, a remote A2A task) as the asking call's
    result: the answer as text for the model, as it was for the record."""
    text = answer if isinstance(answer, str) else json.dumps(answer, default=str)
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=text,
        inputs=call.arguments,
        output=answer,
        turn=turn,
        at=at,
        child_run_id=child_run_id or None,
    )


#: json.dumps(…, ensure_ascii=False, default=str) with its encoder made once (every tool
#: result is rendered: runtime.jsontext).
_output_json = writer(json.JSONEncoder(ensure_ascii=False, default=str))


def render_output(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return _output_json(output)
    except (TypeError, ValueError, RecursionError):  # RecursionError: it refers to itself
        return str(output)


def preview_text(text: str, cap: int, call_id: str) -> str:
    """The first `cap` characters of an output and how to read the rest from the cache."""
    return text[:cap] + (
        f"\n[output truncated: {cap} of {len(text)} characters shown. The full output is "
        f"cached as id {call_id!r}: read on with session_cache_get(id={call_id!r}, "
        f"offset={cap}, limit=N)]"
    )


def cache_key(ctx: ToolContext) -> str:
    return ctx.cache_key


async def execute(
    tools: dict[str, Tool],
    call: ToolCall,
    ctx: ToolContext,
    *,
    turn: int,
    timeout: float,
    max_chars: int,
    blobs: BlobStore,
    fit: int | None = None,
) -> ToolResultMessage:
    """Run one call. `fit`: the characters the context window leaves this result (a longer
    output is shown as a preview, whatever the tool's own cap)."""
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(sorted(tools)) or "none"
        return error_result(call, turn, f"unknown tool {call.name!r}; available tools: {available}")
    if call.arguments is None:
        return error_result(
            call,
            turn,
            f"the arguments for {call.name} could not be used ({call.arguments_error}); "
            "send a JSON object that matches the tool's input schema",
        )
    try:
        check(tool.input_schema, call.arguments)
    except SchemaViolation as exc:
        return error_result(call, turn, f"invalid arguments for {call.name}: {exc}")

    limit = tool.timeout or timeout
    started = time.perf_counter()
    try:
        async with asyncio.timeout(limit):  # no extra task per call, unlike wait_for
            output = await tool.call(call.arguments, ctx)
    except TimeoutError:
        elapsed = int((time.perf_counter() - started) * 1000)
        return error_result(call, turn, f"{call.name} timed out after {limit:g}s", elapsed)
    except ToolError as exc:
        elapsed = int((time.perf_counter() - started) * 1000)
        return error_result(call, turn, str(exc), elapsed)
    except Exception as exc:  # a tool's bug is the model's information, not the run's crash
        elapsed = int((time.perf_counter() - started) * 1000)
        return error_result(call, turn, f"{type(exc).__name__}: {exc}", elapsed)
    elapsed = int((time.perf_counter() - started) * 1000)

    return shape_output(
        tool,
        call,
        ctx,
        output,
        turn=turn,
        cap=min(tool.max_chars or max_chars, fit or max_chars),
        blobs=blobs,
        duration_ms=elapsed,
    )


def shape_output(
    tool: Tool,
    call: ToolCall,
    ctx: ToolContext,
    output: Any,
    *,
    turn: int,
    cap: int,
    blobs: BlobStore,
    duration_ms: int,
) -> ToolResultMessage:
    """What the model reads (capped text) and what the cache keeps (everything).

    Outputs of MCP, HTTP and Lambda tools are always kept whole in the session's cache;
    any other output is kept there when it is too long for the context. Over the cap, the
    model gets a preview and the cache id to page through it with session_cache_get.

    The cache holds the very text the model reads a preview of, so the offsets of the
    truncation notice continue exactly where the preview ended (a tool's structured form,
    e.g. an MCP result's JSON, is twice as long, escaped, and would drift). When that
    structured form is too large to keep in the message itself it goes to a sibling
    object, `{key}.json`, so nothing the tool returned is lost.
    """
    images: list[ImagePart] = []
    if isinstance(output, RichOutput):
        text, full, failed = output.text, output.full, output.is_error
        images = [ImagePart(mime_type=i.mime_type, data=i.data) for i in output.images]
        whole = text if full is None or isinstance(full, str) else render_output(full)
    else:
        text, full, failed = render_output(output), output, False
        whole = text  # its text is its rendering: not rendered twice
    size = len(text)
    small = len(whole.encode()) <= INLINE_OUTPUT_BYTES
    full_ref: str | None = None
    # Kept whole when the model reads a preview, and when the result contract shows one
    # (`output` over INLINE_OUTPUT_BYTES): the record then says where the whole is.
    if tool.cache_outputs or size > cap or not small:
        full_ref = cache_key(ctx)
        blobs.put(full_ref, text.encode(), "text/plain; charset=utf-8")
        if whole != text and not small:
            blobs.put(f"{full_ref}.json", whole.encode(), "application/json")
    content = preview_text(text, cap, call.id) if size > cap else text
    inline = (full if full is not None else text) if small else content[:INLINE_PREVIEW_CHARS]
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        tool_ref=tool.reference,
        content=content,
        success=not failed,
        inputs=None if call.arguments is None else dict(call.arguments),
        output=inline,
        output_truncated=not small,
        duration_ms=duration_ms,
        turn=turn,
        full_output_ref=full_ref,
        full_size=size if full_ref else None,
        images=images,
    )


def find_reusable(
    outputs: list[ToolResultMessage], tool: Tool, call: ToolCall
) -> ToolResultMessage | None:
    """The latest successful, cached result of the same tool (by identity, not by the name
    the model used) with the same arguments."""
    for earlier in reversed(outputs):
        if (
            earlier.tool_ref == tool.reference
            and earlier.success
            and earlier.full_output_ref
            and earlier.inputs == call.arguments
            and earlier.reused_from is None
        ):
            return earlier
    return None


def reuse_result(
    tool: Tool,
    call: ToolCall,
    earlier: ToolResultMessage,
    blobs: BlobStore,
    cap: int,
    turn: int,
    fit: int | None = None,
) -> ToolResultMessage | None:
    """Answer from the cache; None when the cached output is gone (then call for real)."""
    assert earlier.full_output_ref is not None
    try:
        body = blobs.get(earlier.full_output_ref).decode("utf-8", errors="replace")
    except KeyError:
        return None
    limit = min(tool.max_chars or cap, fit or cap)
    note = f"\n[answered from the session cache: output of call {earlier.tool_call_id!r}]"
    content = (preview_text(body, limit, call.id) if len(body) > limit else body) + note
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        tool_ref=tool.reference,
        content=content,
        success=True,
        inputs=call.arguments,
        output=earlier.output,
        output_truncated=earlier.output_truncated,
        turn=turn,
        full_output_ref=earlier.full_output_ref,
        full_size=earlier.full_size,
        reused_from=earlier.tool_call_id,
    )
