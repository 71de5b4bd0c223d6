"""`McpToolset`: the MCP tools of one run advance and the connections behind them.

Connections open lazily (discovery, or a tool's first call) and are always closed when the
toolset exits, so an invocation never leaves a server process or an HTTP session behind.
A server that cannot be reached never fails the run: discovery reports it as an
`McpFailure` and the agent keeps the other servers' tools. `tools/list` answers are kept
per warm container for the server's `cache_ttl`, so a warm run starts without a round trip.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from runtime.safety.schema_check import unusable
from runtime.tools.base import Effect, FunctionTool, RichOutput, Tool, ToolContext, ToolError
from runtime.tools.mcp import live
from runtime.tools.mcp.connection import Connection, McpServer
from runtime.tools.mcp.elicitation import declined_note
from runtime.tools.mcp.errors import McpFailure, Unavailable
from runtime.tools.mcp.limits import MAX_TOOLS, fit
from runtime.tools.mcp.names import assign_names
from runtime.tools.mcp.output import to_rich_output

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp_types import Tool as McpTool

_MAX_PAGES = 100  # a paginator that never ends cannot hang discovery


@dataclass(frozen=True)
class Listing:
    """A server's tools, and what else it offers (resources, prompts) when it has none."""

    tools: list[McpTool]
    others: tuple[str, ...] = ()


#: (server name, config hash) → (expires at, the server's listing); lives as long as the warm
#: container. The SDK's Tool models are shared between runs and never modified.
LISTINGS: dict[tuple[str, str], tuple[float, Listing]] = {}


class McpToolset:
    """The MCP tools of one run advance and the connections behind them.

    `selection` holds the agent's `mcp:SERVER` and `mcp:SERVER/TOOL` references; `secrets`
    resolves `${secret:NAME}` in HTTP headers, OAuth client secrets and stdio environment
    values. After `discover`, `notes` holds warnings that are not failures (renamed tools).
    """

    def __init__(
        self,
        servers: dict[str, McpServer],
        selection: list[str],
        secrets: Callable[[str], str],
        clock_now: Callable[[], float] = time.time,
    ):
        self._servers = servers
        self._secrets = secrets
        self._clock_now = clock_now
        self._wanted: dict[str, set[str] | None] = {}  # server → tool names (None: all)
        for ref in (ref for ref in selection if ref.startswith("mcp:")):
            server, _, tool = ref.removeprefix("mcp:").partition("/")
            known = self._wanted.get(server, set())
            self._wanted[server] = None if not tool or known is None else known | {tool}
        self._connections: dict[str, Connection] = {}
        self._stack: AsyncExitStack | None = None
        self._group: TaskGroup | None = None
        self.notes: list[McpFailure] = []

    async def __aenter__(self) -> McpToolset:
        async with AsyncExitStack() as stack:
            self._group = await stack.enter_async_context(anyio.create_task_group())
            self._stack = stack.pop_all()
        live.register(id(self))
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for connection in self._connections.values():
            connection.close()
        stack, self._stack, self._group = self._stack, None, None
        try:
            if stack is not None:
                # Waits until every owner task has closed its session and stopped its
                # process. The caller's exception is not handed to the task group: it
                # propagates as is.
                await stack.aclose()
        finally:
            live.unregister(id(self))

    async def discover(
        self, limit: int | None = None, reserved: Iterable[str] = ()
    ) -> tuple[dict[str, Tool], list[McpFailure]]:
        """Name → tool for the selected tools of every enabled server (listed concurrently),
        and what is unavailable. Disabled servers are skipped without a word. Names avoid
        `reserved` (the agent's other tools); at most `limit` tools are kept (see limits)."""
        self._task_group()  # outside `async with` is a bug, not a failure of each server
        reserved = set(reserved)
        found: dict[str, Listing | McpFailure] = {}
        async with anyio.create_task_group() as group:
            for server in self._wanted:
                config = self._servers.get(server)
                if config is None:
                    found[server] = McpFailure(server, f"no MCP server named {server!r}")
                elif config.enabled:
                    group.start_soon(self._discover_server, server, config, found)
        offers: list[tuple[str, McpTool, str | None]] = []
        failures: list[McpFailure] = []
        for server, wanted in self._wanted.items():  # the agent's order, not arrival order
            listing = found.get(server)
            if isinstance(listing, McpFailure):
                failures.append(listing)
                continue
            if listing is None:
                continue
            if not listing.tools:
                failures.append(McpFailure(server, _no_tools(server, listing.others)))
            offered = {offer.name for offer in listing.tools}
            for missing in sorted((wanted or set()) - offered):
                failures.append(McpFailure(server, f"server {server} has no tool {missing}"))
            for offer in listing.tools:
                if wanted is None or offer.name in wanted:
                    problem = unusable(offer.input_schema or {"type": "object"})
                    if problem is not None:
                        failures.append(McpFailure(server, unusable_message(offer.name, problem)))
                    offers.append((server, offer, problem))
        names, collisions = assign_names(((s, o.name) for s, o, _ in offers), reserved)
        self.notes = [McpFailure(server, message) for server, message in collisions]
        tools: dict[str, Tool] = {}
        for server, offer, problem in offers:
            tool = self._make_tool(server, offer, problem)
            tool.name = names[(server, offer.name)]
            tools[tool.name] = tool
        if limit is not None:
            picked = {
                f"mcp:{server}/{name}"
                for server, wanted in self._wanted.items()
                for name in wanted or ()
            }
            total = len(tools) + MAX_TOOLS - limit  # the agent's own tools take the rest
            tools, dropped = fit(tools, picked, limit, total)
            failures += dropped
        return tools, failures

    async def _discover_server(
        self, server: str, config: McpServer, found: dict[str, Listing | McpFailure]
    ) -> None:
        key = (server, hashlib.sha256(msgspec.json.encode(config)).hexdigest())
        cached = LISTINGS.get(key)  # keyed by config too: an edited server is listed anew
        if cached is not None and cached[0] > self._clock_now():
            found[server] = cached[1]
            return
        try:
            with anyio.fail_after(config.connect_timeout):
                listing = await self._list_tools(server)
        except Exception as exc:  # refused, timeout, JSON-RPC error, process gone: go on
            timed_out = isinstance(exc, TimeoutError)
            error = f"no tool list within {config.connect_timeout:g}s" if timed_out else None
            found[server] = McpFailure(server, error or self._connection(server).explain(exc))
            self._connection(server).close()  # stop a half-open connect (and process) now
            return
        LISTINGS[key] = (self._clock_now() + config.cache_ttl, listing)
        found[server] = listing

    async def _list_tools(self, server: str) -> Listing:
        """`tools/list`, every page (a thin seam: tests count the calls). For a server that
        does not declare tools, what it offers instead is noted; it is still asked (some
        servers forget the declaration), and a refusal then means it has none."""
        from mcp.shared.exceptions import MCPError

        client = await self._connection(server).client(self._task_group())
        capabilities = client.server_capabilities
        if capabilities.tools is None:
            offers = ("resources", "prompts")
            others = tuple(o for o in offers if getattr(capabilities, o) is not None)
            try:
                return Listing(await self._pages(client), others)
            except MCPError:
                return Listing([], others)
        return Listing(await self._pages(client))

    @staticmethod
    async def _pages(client: Any) -> list[McpTool]:
        listing: list[McpTool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            listing.extend(page.tools)
            if not page.next_cursor or page.next_cursor == cursor:
                break
            cursor = page.next_cursor
        return listing

    def _make_tool(self, server: str, tool: McpTool, problem: str | None = None) -> FunctionTool:
        """The tool as the engine sees it. With a `problem` (its input schema is unusable) the
        schema is neither compiled nor sent to the model (a provider may refuse the whole
        request over it): the tool stays listed and each call is an error saying why.

        A call is bounded by the agent's `tool_timeout`, like any tool's, unless the server
        sets its own `timeout` (which then bounds its calls, as a tool's `timeout` does).
        """
        config = self._servers[server]
        hints = tool.annotations
        effect: Effect = "read_only" if hints and hints.read_only_hint else config.effect
        open_world = is_open_world(tool)
        schema = tool.input_schema or {"type": "object"}
        func: Any = partial(self._call, server, tool.name)
        if problem is not None:
            schema = {"type": "object"}
            func = partial(
                _refuse_call, f"MCP server {server!r}: " + unusable_message(tool.name, problem)
            )
        return FunctionTool(
            name=tool.name,  # replaced by the unique model-facing name
            description=tool.description or tool.name,
            input_schema=schema,
            func=func,
            effect=effect,
            timeout=config.timeout,
            destructive=bool(hints and hints.destructive_hint),
            open_world=open_world,
            cache_outputs=True,
            # the server's cache_reuse, for read-only tools of a closed world only: an
            # open-world tool's answer depends on the world, not on its arguments
            reuse_cached=config.cache_reuse and effect == "read_only" and not open_world,
            reference=f"mcp:{server}/{tool.name}",  # the identity rules match, never the name
        )

    async def _call(
        self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext
    ) -> RichOutput:
        """`tools/call` on the server's session, connecting first if this run has not yet."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        connection = self._connection(server)
        try:
            client = await connection.client(self._task_group())
        except Unavailable as exc:
            raise ToolError(f"MCP server {server!r} is unavailable: {exc}") from None
        asked = len(connection.elicitations.requests)
        limit = self._servers[server].timeout  # None: the engine applies the tool_timeout
        try:
            with anyio.fail_after(limit):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(f"MCP server {server!r} did not answer within {limit:g}s") from None
        except MCPError as exc:
            if (problem := connection.problem()) is not None:  # not the SDK's -32603
                raise ToolError(f"MCP server {server!r}: {problem}") from None
            if exc.code == CONNECTION_CLOSED:  # the process died or the session was dropped
                raise ToolError(f"lost the connection to MCP server {server!r}") from None
            raise ToolError(f"MCP server {server!r} rejected {tool}: {exc.message}") from None
        except Exception as exc:
            message = f"calling {tool} on MCP server {server!r} failed: {connection.explain(exc)}"
            raise ToolError(message) from None
        output = to_rich_output(result)
        elicited = connection.elicitations.requests[asked:]
        if elicited:
            output.text += declined_note(server, elicited)
        return output

    def _connection(self, server: str) -> Connection:
        if server not in self._connections:
            config = self._servers[server]
            self._connections[server] = Connection(server, config, self._secrets, self._clock_now)
        return self._connections[server]

    def _task_group(self) -> TaskGroup:
        if self._group is None:
            raise RuntimeError("McpToolset is used outside its `async with` block")
        return self._group


def unusable_message(tool: str, problem: str) -> str:
    return f"the server's input schema for tool {tool!r} is unusable: {problem}"


def _no_tools(server: str, others: tuple[str, ...]) -> str:
    if others:
        return (
            f"server {server} offers no tools, only {' and '.join(others)}, which an agent "
            "cannot call; nothing of it is offered to the model"
        )
    return f"server {server} lists no tools; nothing of it is offered to the model"


async def _refuse_call(message: str, arguments: dict[str, Any], ctx: ToolContext) -> Any:
    raise ToolError(f"{message}; the tool cannot be called")


def is_open_world(tool: McpTool) -> bool:
    """The tool's `openWorldHint`; absent, true, as the MCP specification defaults it ("If
    true, the tool may interact with an 'open world' of external entities … Default: true"):
    a tool must say it is closed to be treated as closed."""
    hints = tool.annotations
    hint = getattr(hints, "open_world_hint", None) if hints is not None else None
    return hint is not False
