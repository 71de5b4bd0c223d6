"""One MCP server's session: opened by (and closed in) its own owner task.

The SDK's transports hold anyio cancel scopes that must be entered and exited by one task,
while tool calls arrive from whatever task the engine runs them in, so each connection is
owned by a task of the toolset's task group and callers only wait for it to be ready.

What agentfn tells a server about itself is honest: `clientInfo` is agentfn and its
version, and the capabilities are what it really does. It handles elicitation (by declining,
see `elicitation`), in form mode only; it offers no sampling and no roots.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from functools import cache
from typing import TYPE_CHECKING, Any

import anyio

from runtime.spec.plain import HttpMcpServer, StdioMcpServer
from runtime.tools.mcp.elicitation import ElicitationLog
from runtime.tools.mcp.errors import Rejected, Unavailable, describe_error

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp import Client

    from runtime.tools.mcp.auth import ClientCredentials

McpServer = StdioMcpServer | HttpMcpServer

#: agentfn's version when it runs without its distribution metadata (the Lambda package
#: holds `runtime/` only); a test keeps it equal to pyproject.toml's.
VERSION = "0.1.0"


@cache
def agentfn_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentfn")
    except PackageNotFoundError:
        return VERSION


class Connection:
    """One server's client session, opened by (and closed in) its own owner task."""

    def __init__(
        self,
        name: str,
        config: McpServer,
        secrets: Callable[[str], str],
        clock: Callable[[], float] = time.time,
    ):
        self.name = name
        self._clock = clock
        self.config = config
        self.elicitations = ElicitationLog()
        #: The latest 401/403 the server answered (None once it answers a request again).
        self.rejected: Rejected | None = None
        self._auth: ClientCredentials | None = None  # set when the server uses oauth
        self._secrets = secrets
        self._scope = anyio.CancelScope()  # cancels a connect that is still under way
        self._ready = anyio.Event()  # connected, or given up
        self._closing = anyio.Event()
        self._started = False
        self._client: Client | None = None
        self._error: str | None = None
        self._stderr: Any = None  # a stdio server's stderr, kept to explain a failure

    async def client(self, group: TaskGroup) -> Client:
        """The connected client; the first caller starts the connect, bounded by the timeout.
        A failed connection stays failed for this toolset: no reconnect storm mid-run."""
        if not self._started:
            self._started = True
            group.start_soon(self._own)
        with anyio.move_on_after(self.config.connect_timeout):
            await self._ready.wait()
        if not self._ready.is_set():
            self._error = f"no connection within {self.config.connect_timeout:g}s"
            self._scope.cancel()  # the owner unwinds the transport (and stops the process)
        if self._client is None:
            raise Unavailable(self._error or "connection closed")
        return self._client

    def _stdio_context(self) -> str:
        """For a stdio server that failed: what was started, where, and its stderr's tail."""
        config = self.config
        if not isinstance(config, StdioMcpServer):
            return ""
        command = " ".join([config.command, *config.args])
        where = f" (command: {command}; folder: {config.cwd or os.getcwd()})"
        tail = stderr_tail(self._stderr) if self._stderr is not None else ""
        return where + (f"; its stderr ends:\n{tail}" if tail else "")

    def _release_stderr(self, copy: bool) -> None:
        """What the server wrote to stderr goes on to ours (the function's log), as it did
        when it was connected straight to it, once the server is done."""
        file, self._stderr = self._stderr, None
        if file is None:
            return
        if copy:
            with suppress(OSError, ValueError):
                file.flush()
                file.seek(0)
                shutil.copyfileobj(file, sys.stderr)
        file.close()

    def close(self) -> None:
        self._closing.set()
        if not self._ready.is_set():
            self._scope.cancel()

    def problem(self) -> str | None:
        """An authentication problem, if the latest exchange had one: the token endpoint's
        refusal first (the root cause), else the server's 401/403."""
        if self._auth is not None and self._auth.refused is not None:
            return self._auth.refused
        return self.rejected.describe() if self.rejected is not None else None

    def explain(self, exc: BaseException) -> str:
        """What went wrong, in one line: an authentication problem wins over the SDK's
        stand-in error (a 401 reaches it as "MCP error -32603")."""
        return self.problem() or describe_error(exc)

    async def _own(self) -> None:
        with self._scope:
            if isinstance(self.config, StdioMcpServer):
                self._stderr = tempfile.TemporaryFile("w+", errors="replace")  # noqa: SIM115 - outlives the transport; closed by _release_stderr
            try:
                async with self._open() as client:
                    self._client = client
                    self._ready.set()
                    await self._closing.wait()
            except Exception as exc:  # kept for callers; must never fail the task group
                self._error = self._error or self.explain(exc)
                self._error += self._stdio_context()
            finally:  # a failure's stderr is in its error already
                self._release_stderr(copy=self._error is None)
        self._client = None
        self._error = self._error or "connection closed"
        self._ready.set()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        async with AsyncExitStack() as stack:
            if isinstance(config, StdioMcpServer):
                env = {key: self._secrets(value) for key, value in config.env.items()}
                params = StdioServerParameters(
                    command=stdio_command(config.command), args=config.args, env=env, cwd=config.cwd
                )
                errlog = self._stderr if self._stderr is not None else sys.stderr
                transport: Any = stdio_client(params, errlog=errlog)
            else:
                http = await stack.enter_async_context(self._http_client(config))
                transport = streamable_http_client(str(config.url), http_client=http)
            client = honest_client(transport, self.elicitations)
            yield await stack.enter_async_context(client)

    def _http_client(self, config: HttpMcpServer) -> Any:
        """The SDK's HTTP client, with the spec's headers, OAuth when configured, and a hook
        that remembers a 401/403 (the SDK reports those as a bare -32603)."""
        import httpx2

        headers = {key: self._secrets(value) for key, value in config.headers.items()}
        if config.oauth is not None:
            from runtime.tools.mcp.auth import ClientCredentials

            oauth, url = config.oauth, str(config.url)
            timeout = config.connect_timeout
            self._auth = ClientCredentials(oauth, url, self._secrets, timeout, self._clock)

        async def watch(response: httpx2.Response) -> None:
            if response.status_code in (401, 403):
                challenge = response.headers.get("www-authenticate")
                self.rejected = Rejected(response.status_code, challenge)
            elif response.status_code < 400:
                self.rejected = None

        # Reads wait as long as the call may run: the agent's tool_timeout bounds each call.
        limits = httpx2.Timeout(config.connect_timeout, read=None)
        hooks = {"response": [watch]}
        return httpx2.AsyncClient(
            headers=headers, timeout=limits, auth=self._auth, event_hooks=hooks
        )


def honest_client(transport: Any, elicitations: ElicitationLog) -> Client:
    """An SDK client that says it is agentfn and declares only what agentfn does."""
    import mcp_types as mt

    info = mt.Implementation(name="agentfn", version=agentfn_version())
    return _client_class()(
        transport,
        cache=None,
        read_timeout_seconds=None,  # a call is bounded by the agent's tool_timeout
        client_info=info,
        elicitation_callback=elicitations,
    )


@cache
def _client_class() -> type[Client]:
    """The SDK's Client, with a capability ad trimmed to the truth: given an elicitation
    callback the SDK declares URL mode too, which agentfn does not handle."""
    import mcp_types as mt
    from mcp import Client

    class AgentfnClient(Client):
        async def _build_session(self, exit_stack: AsyncExitStack) -> Any:
            session = await super()._build_session(exit_stack)
            build = session._build_capabilities

            def capabilities(version: str) -> mt.ClientCapabilities:
                declared = build(version)
                if declared.elicitation is not None:
                    form = mt.FormElicitationCapability()
                    declared.elicitation = mt.ElicitationCapability(form=form)
                return declared

            # The SDK offers no setting for this; the session asks this one method.
            session._build_capabilities = capabilities  # type: ignore[method-assign]
            return session

    return AgentfnClient


STDERR_TAIL_LINES = 8
STDERR_TAIL_CHARS = 1_500


def stderr_tail(file: Any) -> str:
    """The last lines a stdio server wrote to its stderr (bounded)."""
    try:
        file.flush()
        file.seek(0)
        text = file.read()
    except (OSError, ValueError):
        return ""
    lines = [line for line in text.splitlines() if line.strip()][-STDERR_TAIL_LINES:]
    return "\n".join(lines)[-STDERR_TAIL_CHARS:]


def stdio_command(command: str) -> str:
    """`python`/`python3` mean the interpreter running agentfn (its virtual environment, or
    the Lambda runtime), so a spec can start a Python MCP server portably."""
    return sys.executable if command in {"python", "python3"} else command
