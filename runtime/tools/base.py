"""The tool protocol: what the loop needs to offer a tool to a model and to call it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Effect = Literal["read_only", "idempotent", "at_most_once"]


class ToolError(Exception):
    """A tool failed in a way the model should hear about (success=false), not a crash."""


@dataclass
class RichOutput:
    """An output with two faces: `text` for the model (capped by the loop) and `full`, the
    complete content (any JSON-able value) kept in the tool-output cache.

    `is_error` reports a failure the tool itself described (MCP `isError`, an HTTP 4xx/5xx
    body): the call did not crash, but the model must see success=false.

    `images` are pictures the tool returned (an MCP ImageContent): the loop passes them on to
    the models that accept images in tool results; the others read the text placeholder.
    """

    text: str
    full: Any = None
    is_error: bool = False
    images: list[ToolImage] = field(default_factory=list)


@dataclass(frozen=True)
class ToolImage:
    """One image of a tool result: its media type and base64 data."""

    mime_type: str
    data: str


@dataclass
class ToolContext:
    """What a tool may know about the call. `idempotency_key` (the run and the call) is what
    HTTP and Lambda tools send so a retried call can be deduplicated by the callee; it is
    unique across runs even when a provider's call ids are not.

    `blobs` and `session_outputs` serve the built-ins that read the tool-output cache and
    the storage prefix; ordinary tools ignore them.
    """

    run_id: str
    session_id: str
    agent: str
    call_id: str
    blobs: Any = None  # runtime.store.base.BlobStore
    session_outputs: Callable[[], list[Any]] | None = None  # cached ToolResultMessages
    team: Any = None  # runtime.tools.team.TeamView, for the team tools
    #: The engine's clock: what `get_time_date` reads, so a replayed eval (whose clock
    #: starts when its cassette was recorded) is told the recorded day.
    now: Callable[[], float] | None = None

    @property
    def idempotency_key(self) -> str:
        return f"{self.run_id}:{self.call_id}"

    @property
    def cache_key(self) -> str:
        """Where the call's full output is cached: under the agent (IAM scopes each agent to
        its prefix), the session and the run, so no other agent, session or run can
        overwrite or read it, whatever the call ids."""
        return f"tool-cache/{self.agent}/{self.session_id}/{self.run_id}/{self.call_id}"


class Tool(Protocol):
    """A callable tool. `name` is what the model sees (provider-safe, possibly shortened);
    `reference` is the tool's identity as the spec names it (`refund`, `builtin:get_time_date`,
    `mcp:orders/delete.item`): approval rules, effects and the cache match on `reference`,
    never on a name parsed back from what the model sent."""

    name: str
    reference: str
    description: str
    input_schema: dict[str, Any]
    effect: Effect
    timeout: float | None  # None: the agent's tool_timeout
    max_chars: int | None  # None: the agent's tool_result_max_chars
    destructive: bool
    #: MCP `openWorldHint`: reaches an open world of external entities (never reused from
    #: the cache, flagged in tool_call events, gated by `open_world: true` rules).
    open_world: bool
    #: Keep every output whole in the session's tool-output cache (MCP, HTTP, Lambda tools).
    cache_outputs: bool
    #: Answer an identical earlier call of this session from the cache (read-only tools).
    reuse_cached: bool

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Return the output (any JSON-able value, or a RichOutput); raise ToolError (or
        anything) on failure."""
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
    open_world: bool = False
    cache_outputs: bool = False
    reuse_cached: bool = False
    reference: str = ""  # set by the toolset that offers it

    async def call(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        return await self.func(arguments, ctx)
