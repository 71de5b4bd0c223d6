"""The conversation every provider test sends, and small helpers they share."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Coroutine
from typing import Any, TypeVar

from runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from runtime.models.base import ModelRequest, ToolSpec

T = TypeVar("T")

KEY = "test-key-123"
SYSTEM = "You are a terse assistant."
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TIME_SCHEMA = {"type": "object", "properties": {"tz": {"type": "string"}}}
TOOLS = [
    ToolSpec("get_weather", "Current weather for a city.", WEATHER_SCHEMA),
    ToolSpec("get_time", "Current time in a time zone.", TIME_SCHEMA),
]
USER = UserMessage(content="Weather and time in Paris?")
ASSISTANT = AssistantMessage(
    text="Checking both.",
    tool_calls=[
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_2", name="get_time", arguments={"tz": "Europe/Paris"}),
    ],
    stop_reason="tool_use",
)
RESULT_OK = ToolResultMessage(
    tool_call_id="call_1", tool_name="get_weather", content="18C, cloudy", success=True
)
RESULT_FAILED = ToolResultMessage(
    tool_call_id="call_2", tool_name="get_time", content="unknown time zone", success=False
)


def conversation(tools: bool = True) -> ModelRequest:
    return ModelRequest(
        system=SYSTEM,
        messages=[USER, ASSISTANT, RESULT_OK, RESULT_FAILED],
        tools=list(TOOLS) if tools else [],
        call_number=3,
    )


def simple(text: str = "hi") -> ModelRequest:
    return ModelRequest(system=SYSTEM, messages=[UserMessage(content=text)])


class Secrets:
    """A secret resolver that remembers what it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, ref: str) -> str:
        self.asked.append(ref)
        return KEY


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was just released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
