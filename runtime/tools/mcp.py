"""MCP servers as tools: discover an agent's `mcp:` tools and call them over stdio or HTTP.

One `McpToolset` serves one run advance. Connections open lazily (discovery, or a tool's
first call) and are always closed when the toolset exits, so an invocation never leaves a
server process or an HTTP session behind. Each connection is owned by its own task in the
toolset's task group: the SDK's transports hold anyio cancel scopes that must be entered
and exited by one task, while tool calls arrive from whatever task the engine runs them in
(read-only calls are gathered concurrently).

A server that cannot be reached never fails the run: discovery reports it as an
`McpFailure` and the agent keeps the other servers' tools. `tools/list` answers are kept
per warm container for the server's `cache_ttl`, so a warm run starts without a round trip.
The `mcp` SDK (~0.8 s to import) is imported only inside functions.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from runtime.schema_check import unusable
from runtime.spec.tools import HttpMcpServer, StdioMcpServer
from runtime.tools.base import FunctionTool, RichOutput, Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp import Client
    from mcp_types import CallToolResult
    from mcp_types import Tool as McpTool

McpServer = StdioMcpServer | HttpMcpServer

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
_MAX_PAGES = 100  # a paginator that never ends cannot hang discovery


@dataclass(frozen=True)
class McpFailure:
    """A selected server (or tool) that is unavailable in this run, and why; the run goes on
    without it, and the error is worth logging and showing in `list_tools_available`."""

    server: str
    error: str


#: (server name, config hash) → (expires at, the server's tools); lives as long as the warm
#: container. The SDK's Tool models are shared between runs and never modified.
_LISTINGS: dict[tuple[str, str], tuple[float, list[McpTool]]] = {}


def tool_name(server: str, tool: str, *, hashed: bool = False) -> str:
    """`mcp__{server}__{tool}` in the characters and length every provider accepts; a name
    that is shortened (or `hashed`) ends in a hash of the original, so it stays distinct."""
    name = f"mcp__{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= _MAX_NAME and not hashed:
        return name
    return f"{name[: _MAX_NAME - 9]}_{hashlib.sha256(tool.encode()).hexdigest()[:8]}"


def describe_error(exc: BaseException) -> str:
    """One readable line, found inside the exception groups the SDK's task groups raise."""
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, _Unavailable):  # already described
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _Unavailable(Exception):
    """The server's connection failed (or was given up); the message says why."""


class _Connection:
    """One server's client session, opened by (and closed in) its own owner task."""

    def __init__(self, config: McpServer, secrets: Callable[[str], str]):
        self.config = config
        self._secrets = secrets
        self._scope = anyio.CancelScope()  # cancels a connect that is still under way
        self._ready = anyio.Event()  # connected, or given up
        self._closing = anyio.Event()
        self._started = False
        self._client: Client | None = None
        self._error: str | None = None

    async def client(self, group: TaskGroup) -> Client:
        """The connected client; the first caller starts the connect, bounded by the timeout.
        A failed connection stays failed for this toolset: no reconnect storm mid-run."""
        if not self._started:
            self._started = True
            group.start_soon(self._own)
        with anyio.move_on_after(self.config.timeout):
            await self._ready.wait()
        if not self._ready.is_set():
            self._error = f"no connection within {self.config.timeout:g}s"
            self._scope.cancel()  # the owner unwinds the transport (and stops the process)
        if self._client is None:
            raise _Unavailable(self._error or "connection closed")
        return self._client

    def close(self) -> None:
        self._closing.set()
        if not self._ready.is_set():
            self._scope.cancel()

    async def _own(self) -> None:
        with self._scope:
            try:
                async with self._open() as client:
                    self._client = client
                    self._ready.set()
                    await self._closing.wait()
            except Exception as exc:  # kept for callers; must never fail the task group
                self._error = self._error or describe_error(exc)
        self._client = None
        self._error = self._error or "connection closed"
        self._ready.set()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        async with AsyncExitStack() as stack:
            if isinstance(config, StdioMcpServer):
                env = {key: self._secrets(value) for key, value in config.env.items()}
                params = StdioServerParameters(
                    command=stdio_command(config.command), args=config.args, env=env, cwd=config.cwd
                )
                transport = stdio_client(params, errlog=_errlog(stack))
            else:
                import httpx2  # the SDK's HTTP client: headers are set on it, not the transport

                headers = {key: self._secrets(value) for key, value in config.headers.items()}
                timeout = httpx2.Timeout(config.timeout, read=max(config.timeout, 300.0))
                http = httpx2.AsyncClient(headers=headers, timeout=timeout)
                await stack.enter_async_context(http)
                transport = streamable_http_client(str(config.url), http_client=http)
            client = Client(transport, cache=None, read_timeout_seconds=config.timeout)
            yield await stack.enter_async_context(client)


def _errlog(stack: AsyncExitStack) -> Any:
    """A stdio server's stderr joins ours (the function's log) when that is a real file."""
    with suppress(AttributeError, OSError, ValueError):
        sys.stderr.fileno()
        return sys.stderr
    return stack.enter_context(open(os.devnull, "w"))


class McpToolset:
    """The MCP tools of one run advance and the connections behind them.

    `selection` holds the agent's `mcp:SERVER` and `mcp:SERVER/TOOL` references; `secrets`
    resolves `${secret:NAME}` in HTTP headers and stdio environment values.
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
        self._connections: dict[str, _Connection] = {}
        self._stack: AsyncExitStack | None = None
        self._group: TaskGroup | None = None

    async def __aenter__(self) -> McpToolset:
        async with AsyncExitStack() as stack:
            self._group = await stack.enter_async_context(anyio.create_task_group())
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for connection in self._connections.values():
            connection.close()
        stack, self._stack, self._group = self._stack, None, None
        if stack is not None:
            # Waits until every owner task has closed its session and stopped its process.
            # The caller's exception is not handed to the task group: it propagates as is.
            await stack.aclose()

    async def discover(self) -> tuple[dict[str, Tool], list[McpFailure]]:
        """Name → tool for the selected tools of every enabled server (listed concurrently),
        and what is unavailable. Disabled servers are skipped without a word."""
        self._task_group()  # outside `async with` is a bug, not a failure of each server
        found: dict[str, list[McpTool] | McpFailure] = {}
        async with anyio.create_task_group() as group:
            for server in self._wanted:
                config = self._servers.get(server)
                if config is None:
                    found[server] = McpFailure(server, f"no MCP server named {server!r}")
                elif config.enabled:
                    group.start_soon(self._discover_server, server, config, found)
        tools: dict[str, Tool] = {}
        failures: list[McpFailure] = []
        for server, wanted in self._wanted.items():  # the agent's order, not arrival order
            listing = found.get(server)
            if isinstance(listing, McpFailure):
                failures.append(listing)
            elif listing is not None:
                offered = {offer.name for offer in listing}
                for missing in sorted((wanted or set()) - offered):
                    failures.append(McpFailure(server, f"server {server} has no tool {missing}"))
                for offer in listing:
                    if wanted is None or offer.name in wanted:
                        problem = unusable(offer.input_schema or {"type": "object"})
                        if problem is not None:
                            failures.append(
                                McpFailure(server, unusable_message(offer.name, problem))
                            )
                        tool = self._make_tool(server, offer, problem)
                        if tool.name in tools:  # two names that sanitise alike
                            tool.name = tool_name(server, offer.name, hashed=True)
                        tools[tool.name] = tool
        return tools, failures

    async def _discover_server(
        self, server: str, config: McpServer, found: dict[str, list[McpTool] | McpFailure]
    ) -> None:
        key = (server, hashlib.sha256(config.model_dump_json().encode()).hexdigest())
        cached = _LISTINGS.get(key)  # keyed by config too: an edited server is listed anew
        if cached is not None and cached[0] > self._clock_now():
            found[server] = cached[1]
            return
        try:
            with anyio.fail_after(config.timeout):
                listing = await self._list_tools(server)
        except Exception as exc:  # refused, timeout, JSON-RPC error, process gone: go on
            timed_out = isinstance(exc, TimeoutError)
            error = f"no tool list within {config.timeout:g}s" if timed_out else None
            found[server] = McpFailure(server, error or describe_error(exc))
            self._connection(server).close()  # stop a half-open connect (and process) now
            return
        _LISTINGS[key] = (self._clock_now() + config.cache_ttl, listing)
        found[server] = listing

    async def _list_tools(self, server: str) -> list[McpTool]:
        """`tools/list`, every page (a thin seam: tests count the calls)."""
        client = await self._connection(server).client(self._task_group())
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
        request over it): the tool stays listed and each call is an error saying why."""
        config = self._servers[server]
        hints = tool.annotations
        schema = tool.input_schema or {"type": "object"}
        func: Any = partial(self._call, server, tool.name)
        if problem is not None:
            schema = {"type": "object"}
            func = partial(
                _refuse_call, f"MCP server {server!r}: " + unusable_message(tool.name, problem)
            )
        return FunctionTool(
            name=tool_name(server, tool.name),
            description=tool.description or tool.name,
            input_schema=schema,
            func=func,
            effect="read_only" if hints and hints.read_only_hint else config.effect,
            timeout=config.timeout,
            destructive=bool(hints and hints.destructive_hint),
            cache_outputs=True,
            reuse_cached=False,
            reference=f"mcp:{server}/{tool.name}",  # the identity rules match, never the name
        )

    async def _call(
        self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext
    ) -> RichOutput:
        """`tools/call` on the server's session, connecting first if this run has not yet."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        timeout = self._servers[server].timeout
        try:
            client = await self._connection(server).client(self._task_group())
        except _Unavailable as exc:
            raise ToolError(f"MCP server {server!r} is unavailable: {exc}") from None
        try:
            with anyio.fail_after(timeout):
                result = await client.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(f"MCP server {server!r} did not answer within {timeout:g}s") from None
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:  # the process died or the session was dropped
                raise ToolError(f"lost the connection to MCP server {server!r}") from None
            raise ToolError(f"MCP server {server!r} rejected {tool}: {exc.message}") from None
        except Exception as exc:
            message = f"calling {tool} on MCP server {server!r} failed: {describe_error(exc)}"
            raise ToolError(message) from None
        return to_rich_output(result)

    def _connection(self, server: str) -> _Connection:
        if server not in self._connections:
            self._connections[server] = _Connection(self._servers[server], self._secrets)
        return self._connections[server]

    def _task_group(self) -> TaskGroup:
        if self._group is None:
            raise RuntimeError("McpToolset is used outside its `async with` block")
        return self._group


def unusable_message(tool: str, problem: str) -> str:
    return f"the server's input schema for tool {tool!r} is unusable: {problem}"


async def _refuse_call(message: str, arguments: dict[str, Any], ctx: ToolContext) -> Any:
    raise ToolError(f"{message}; the tool cannot be called")


def to_rich_output(result: CallToolResult) -> RichOutput:
    """Text the model can read for every content block; the complete content (base64 data,
    structured content, parsed JSON text) goes to `full` for the tool-output cache."""
    import mcp_types as mt

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mt.TextContent):
            parts.append(block.text)
        elif isinstance(block, mt.ImageContent | mt.AudioContent):
            try:
                size = len(base64.b64decode(block.data))
            except ValueError:  # binascii.Error included
                size = len(block.data) * 3 // 4
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
    return RichOutput(text=text or placeholder, full=full, is_error=result.is_error)


def stdio_command(command: str) -> str:
    """`python`/`python3` mean the interpreter running agentfn (its virtual environment, or
    the Lambda runtime), so a spec can start a Python MCP server portably."""
    return sys.executable if command in {"python", "python3"} else command
