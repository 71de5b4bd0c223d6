"""Anthropic Messages API over plain HTTP (no SDK, to keep the Lambda package small)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from runtime.errors import ModelError
from runtime.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from runtime.models.base import (
    ModelRequest,
    ModelResponse,
    StopReason,
    assemble_response,
    images_of,
)
from runtime.models.failures import classify_http
from runtime.models.http import HttpModel, post_json, post_stream
from runtime.models.streaming import CallBuffer, SseEvent, TextSink, event_json, unstreamed
from runtime.spec.plain import AnthropicModel

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096  # the API requires max_tokens; this is what we ask for when unset

_STOP: dict[str, StopReason] = {"tool_use": "tool_use", "max_tokens": "max_tokens"}
#: Image types a `tool_result` block may hold, as base64 image blocks:
#: https://docs.anthropic.com/en/docs/build-with-claude/vision
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def tool_result_block(message: ToolResultMessage) -> dict[str, Any]:
    """A `tool_result` block: plain text content, or text then image blocks when the tool
    returned pictures; `is_error` marks a failed call (an MCP `isError` result too)."""
    images = images_of(message, IMAGE_TYPES)
    content: str | list[dict[str, Any]] = message.content
    if images:
        content = [{"type": "text", "text": message.content}] + [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
            }
            for image in images
        ]
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
        "is_error": not message.success,
    }


def merge_turns(
    turns: list[tuple[str, list[dict[str, Any]]]], key: str = "content"
) -> list[dict[str, Any]]:
    """`(role, blocks)` pairs as alternating messages: consecutive turns of one role (the
    tool results of one step, a user note after them) become one message, as the Messages
    API (and Gemini, with key="parts") requires. Turns without blocks are dropped."""
    merged: list[dict[str, Any]] = []
    for role, blocks in turns:
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1][key].extend(blocks)
        else:
            merged.append({"role": role, key: list(blocks)})
    return merged


def anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = (
                [{"type": "text", "text": message.text}] if message.text else []
            )
            blocks += [
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": call.arguments or {},
                }
                for call in message.tool_calls
            ]
            turns.append(("assistant", blocks))
        elif isinstance(message, ToolResultMessage):
            turns.append(("user", [tool_result_block(message)]))
        else:
            turns.append(("user", [{"type": "text", "text": message.content}]))
    return merge_turns(turns)


class AnthropicMessagesModel(HttpModel[AnthropicModel]):
    """One POST /v1/messages per request."""

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        config = self._config
        body: dict[str, Any] = {
            "model": config.model_id,
            "max_tokens": config.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": anthropic_messages(request.messages),
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
            if not request.allow_tools:
                body["tool_choice"] = {"type": "none"}
        if config.temperature is not None:
            body["temperature"] = config.temperature
        return body

    async def request(self, request: ModelRequest) -> ModelResponse:
        key = self._api_key() or ""
        base = str(self._config.base_url or "https://api.anthropic.com").rstrip("/")
        where: dict[str, Any] = {
            "headers": {"x-api-key": key, "anthropic-version": API_VERSION},
            "body": self._body(request),
            "timeout": self._config.timeout,
            "secret": key,
        }
        url = f"{base}/v1/messages"
        if request.on_text is None or not self._config.stream:
            return self._parse(await post_json(self._client, "anthropic", url, **where))
        where["body"]["stream"] = True
        return await self._read_stream(
            post_stream(self._client, "anthropic", url, **where), request.on_text
        )

    async def _read_stream(
        self, events: AsyncIterator[SseEvent | dict[str, Any]], sink: TextSink
    ) -> ModelResponse:
        """Messages API events: `message_start` (input usage), per content block a
        `content_block_start` (a tool_use block names its id and tool), `content_block_delta`s
        (`text_delta`, or the input's JSON in `input_json_delta` pieces) and a stop;
        `message_delta` (stop reason, output usage so far); `error` (e.g. overloaded)."""
        texts: list[str] = []
        calls = CallBuffer()
        stop_reason, input_tokens, output_tokens = "", 0, 0
        async for item in events:
            if isinstance(item, dict):  # the server did not stream
                return unstreamed(self._parse(item), sink)
            data = event_json(item, "anthropic")
            kind = data.get("type") or item.event
            if kind == "message_start":
                usage = (data.get("message") or {}).get("usage") or {}
                input_tokens = usage.get("input_tokens") or 0
                output_tokens = usage.get("output_tokens") or 0
            elif kind == "content_block_start":
                block = data.get("content_block") or {}
                if block.get("type") == "tool_use":
                    calls.start(data.get("index", 0), block.get("id", ""), block.get("name", ""))
                elif block.get("type") == "text" and block.get("text"):
                    texts.append(block["text"])
                    sink(block["text"])
            elif kind == "content_block_delta":
                delta = data.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    texts.append(delta["text"])
                    sink(delta["text"])
                elif delta.get("type") == "input_json_delta":
                    calls.extend(data.get("index", 0), delta.get("partial_json") or "")
            elif kind == "message_delta":
                stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                output_tokens = (data.get("usage") or {}).get("output_tokens") or output_tokens
            elif kind == "error":
                error = data.get("error") or {}
                message = f"{error.get('type', 'error')}: {error.get('message', '')}"
                status = 529 if error.get("type") == "overloaded_error" else 500
                raise classify_http("anthropic", status, message, {}, data)
        stop = _STOP.get(stop_reason, "end_turn")
        return assemble_response(
            texts, calls.finished(), stop, input_tokens, output_tokens, self.model_id
        )

    def _parse(self, answer: dict[str, Any]) -> ModelResponse:
        content = answer.get("content")
        if not isinstance(content, list):
            raise ModelError("anthropic answered without a content list", provider="anthropic")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in content:
            if block.get("type") == "text":
                texts.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                calls.append(
                    ToolCall.from_json(
                        block.get("id", ""), block.get("name", ""), block.get("input")
                    )
                )
        # end_turn, stop_sequence, pause_turn, refusal: the model stopped on its own
        stop = _STOP.get(answer.get("stop_reason") or "", "end_turn")
        usage = answer.get("usage") or {}
        return assemble_response(
            texts,
            calls,
            stop,
            usage.get("input_tokens") or 0,
            usage.get("output_tokens") or 0,
            self.model_id,
        )
