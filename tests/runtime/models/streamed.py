"""Recorded one-shot answers re-told as each provider's documented stream, so the same real
exchange is replayed both ways (test_stream_replay.py).

The recordings are of non-streamed calls (there are no recorded streams); each answer is
cut into the events its provider's streaming API sends for it — text in pieces, tool call
arguments in JSON fragments, the stop reason and usage where that API puts them:
- OpenAI Chat Completions: `data:` chunks of `choices[0].delta`, a usage chunk, `[DONE]`
  (https://platform.openai.com/docs/api-reference/chat-streaming);
- Anthropic Messages: message_start … content_block_* … message_delta, message_stop
  (https://docs.anthropic.com/en/docs/build-with-claude/streaming);
- Gemini `streamGenerateContent?alt=sse`: GenerateContentResponse chunks, the last with the
  finish reason and usage;
- Bedrock ConverseStream: an AWS event stream of messageStart, contentBlockStart/Delta/Stop,
  messageStop and metadata (tests/aws_eventstream.py frames it).
"""

from __future__ import annotations

import json
from typing import Any

from tests.aws_eventstream import event as aws_event


def pieces(text: str, count: int = 3) -> list[str]:
    """`text` in `count` pieces (fewer for short text), joined back exactly."""
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    lines = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        lines.append((f"event: {name}\n" if name else "") + f"data: {payload}\n\n")
    return "".join(lines).encode()


def openai_stream(body: dict[str, Any]) -> bytes:
    choice = body["choices"][0]
    message = choice["message"]
    base = {k: body[k] for k in ("id", "created", "model") if k in body}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, Any]:
        return None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    events += [chunk({"content": piece}) for piece in pieces(content)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        named = {"name": function["name"], "arguments": ""}
        first = {"index": index, "id": call.get("id"), "type": "function", "function": named}
        events.append(chunk({"tool_calls": [first]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(function.get("arguments") or "", 4)
        ]
    events.append(chunk({}, choice.get("finish_reason")))
    if body.get("usage"):
        events.append((None, {**base, "choices": [], "usage": body["usage"]}))
    events.append((None, "[DONE]"))
    return _sse(events)


def anthropic_stream(body: dict[str, Any]) -> bytes:
    usage = body.get("usage") or {}
    start = {k: v for k, v in body.items() if k not in ("content", "usage", "stop_reason")}
    start.update(content=[], stop_reason=None)
    start["usage"] = {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 1}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(body.get("content") or []):
        kind = block.get("type")
        if kind == "tool_use":
            opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in pieces(json.dumps(block.get("input") or {}), 4)
            ]
        elif kind == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
        else:  # thinking and other blocks: opened whole
            opened, deltas = block, []
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opened},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": None},
                "usage": {"output_tokens": usage.get("output_tokens", 0)},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


def gemini_stream(body: dict[str, Any]) -> bytes:
    candidate = body["candidates"][0]
    parts = (candidate.get("content") or {}).get("parts") or []
    chunks: list[dict[str, Any]] = []
    for part in parts:
        text = part.get("text")
        if text and "functionCall" not in part:
            for number, piece in enumerate(pieces(text, 2)):
                extra = {k: v for k, v in part.items() if k != "text" and (number == 0 or k == "thought")}  # fmt: skip
                chunks.append({"text": piece, **extra})
        else:
            chunks.append(part)
    events: list[tuple[str | None, Any]] = []
    for number, part in enumerate(chunks or [None]):
        found: dict[str, Any] = {"content": {"role": "model", "parts": [part] if part else []}}
        found["index"] = 0
        answer: dict[str, Any] = {"candidates": [found]}
        if number == max(0, len(chunks) - 1):  # the last: why it stopped, what it used
            found.update({k: v for k, v in candidate.items() if k not in ("content", "index")})
            answer.update({k: v for k, v in body.items() if k != "candidates"})
        events.append((None, answer))
    return _sse(events)


def bedrock_stream(body: dict[str, Any]) -> bytes:
    frames = [aws_event("messageStart", {"role": "assistant"})]
    content = ((body.get("output") or {}).get("message") or {}).get("content") or []
    for index, block in enumerate(content):
        if "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            frames.append(aws_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))  # fmt: skip
            frames += [
                aws_event(
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}},
                )
                for piece in pieces(json.dumps(use.get("input") or {}), 4)
            ]
        elif "text" in block:
            frames += [
                aws_event(
                    "contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}}
                )
                for piece in pieces(block["text"])
            ]
        frames.append(aws_event("contentBlockStop", {"contentBlockIndex": index}))
    frames.append(aws_event("messageStop", {"stopReason": body.get("stopReason")}))
    usage = body.get("usage") or {}
    frames.append(aws_event("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))
    return b"".join(frames)


STREAMS = {
    "openai": openai_stream,
    "azure_openai": openai_stream,
    "openai_compatible": openai_stream,
    "ollama": openai_stream,
    "anthropic": anthropic_stream,
    "gemini": gemini_stream,
    "bedrock": bedrock_stream,
}
