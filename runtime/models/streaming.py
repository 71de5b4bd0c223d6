"""Streamed answers: the server-sent events every HTTP provider speaks, and the assembly of
their deltas into exactly the `ModelResponse` the one-shot call gives.

A provider streams when the request carries an `on_text` sink (the engine passes one when
the model's `stream` setting is on, its default) and hands each text delta to it as it
arrives; tool calls, usage and the stop reason are assembled and returned whole, so the
engine commits the same message either way. Chunks are ephemeral: nothing here is stored.

A server that ignores `stream: true` and answers one JSON document (some OpenAI-compatible
servers do) is read as the one-shot answer, its whole text one chunk.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from runtime.errors import ModelError, TransientModelError
from runtime.messages import ToolCall

#: Receives each delta of the answer's text, in order (thread-safe sinks only: Bedrock's
#: stream is read in a worker thread).
TextSink = Callable[[str], None]


@dataclass
class SseEvent:
    event: str
    data: str


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[SseEvent]:
    """Server-sent events (https://html.spec.whatwg.org/#event-stream-interpretation): `data`
    lines joined by newlines, dispatched at a blank line; comments and ids ignored."""
    event, data = "", list[str]()
    async for line in lines:
        if not line:
            if data:
                yield SseEvent(event or "message", "\n".join(data))
            event, data = "", list[str]()
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            elif name == "event":
                event = value
    if data:
        yield SseEvent(event or "message", "\n".join(data))


def event_json(event: SseEvent, provider: str) -> Any:
    try:
        return json.loads(event.data)
    except ValueError:
        raise TransientModelError(
            f"{provider} streamed an event that is not JSON: {event.data[:200]!r}",
            provider=provider,
        ) from None


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""
    provider_data: dict[str, Any] | None = None


@dataclass
class CallBuffer:
    """Tool calls arriving in pieces, keyed by the position the provider gives them (OpenAI's
    `index`, Anthropic's and Bedrock's content block index): the id and name first, the
    arguments' JSON text in fragments."""

    calls: dict[int, _PartialCall] = field(default_factory=dict)

    def start(self, key: int, call_id: str = "", name: str = "") -> None:
        call = self.calls.setdefault(key, _PartialCall())
        call.id = call.id or call_id
        call.name = call.name or name

    def extend(self, key: int, fragment: str) -> None:
        self.calls.setdefault(key, _PartialCall()).arguments += fragment

    def finished(self) -> list[ToolCall]:
        """The calls in order; arguments parsed as the one-shot answer's are (`from_json`
        keeps what does not parse, so the model is told, not crashed on)."""
        done = []
        for _, call in sorted(self.calls.items()):
            arguments: Any = call.arguments if call.arguments.strip() else None
            done.append(ToolCall.from_json(call.id, call.name, arguments))
        return done


def unstreamed(whole: Any, sink: TextSink) -> Any:
    """The one-shot answer of a server that ignored the stream request: its text is one
    chunk, so watchers still see it."""
    if whole.text:
        sink(whole.text)
    return whole


def stream_failure(provider: str, exc: Exception) -> ModelError:
    """A stream cut off after it started: worth a retry (the retry starts the answer over,
    and the sink is told by the engine that it did)."""
    return TransientModelError(
        f"{provider} stream broke off: {type(exc).__name__}: {exc}", provider=provider
    )
