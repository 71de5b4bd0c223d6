"""The tool protocol: what the loop needs to offer a tool to a model and to call it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Effect = Literal["read_only", "idempotent", "at_most_once"]


class ToolError(Exception):
    """A tool failed in a way the model should hear about (success=false), not a crash."""


@dataclass
class ToolContext:
    """What a tool may know about the call. `call_id` doubles as the idempotency key."""

    run_id: str
    session_id: str
    agent: str
    call_id: str
    extra: dict[str, Any] = field(default_factory=dict)


class Tool(Protocol):
    name: str
    description: str
    input_schema: dict[str, Any]
    effect: Effect
    timeout: float | None  # None: the agent's tool_timeout
    max_chars: int | None  # None: the agent's tool_result_max_chars
    destructive: bool

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Return the output (any JSON-able value); raise ToolError (or anything) on failure."""
        ...


@dataclass
class FunctionTool:
    """A tool backed by an async function; the common base for Python and built-in tools."""

    name: str
    description: str
    input_schema: dict[str, Any]
    func: Any  # async (arguments, ctx) -> Any
    effect: Effect = "read_only"
    timeout: float | None = None
    max_chars: int | None = None
    destructive: bool = False

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return await self.func(arguments, ctx)
