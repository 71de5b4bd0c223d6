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

from runtime.messages import ToolCall, ToolResultMessage
from runtime.schema_check import SchemaViolation, check
from runtime.store.base import BlobStore
from runtime.tools.base import Tool, ToolContext, ToolError

INLINE_OUTPUT_BYTES = 8 * 1024


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


def render_output(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(output)


def cache_key(ctx: ToolContext) -> str:
    return f"tool-cache/{ctx.agent}/{ctx.session_id}/{ctx.call_id}"


async def execute(
    tools: dict[str, Tool],
    call: ToolCall,
    ctx: ToolContext,
    *,
    turn: int,
    timeout: float,
    max_chars: int,
    blobs: BlobStore,
) -> ToolResultMessage:
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

    content = render_output(output)
    size = len(content.encode())
    cap = tool.max_chars or max_chars
    full_ref: str | None = None
    if len(content) > cap:
        full_ref = cache_key(ctx)
        blobs.put(full_ref, content.encode(), "text/plain; charset=utf-8")
        content = (
            content[:cap]
            + f"\n[output truncated: {cap} of {len(content)} characters shown; the full output "
            f"is kept as {full_ref}]"
        )
    inline = output if size <= INLINE_OUTPUT_BYTES else content[:2000]
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=content,
        success=True,
        inputs=call.arguments,
        output=inline,
        duration_ms=elapsed,
        turn=turn,
        full_output_ref=full_ref,
    )
