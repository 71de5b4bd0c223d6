"""A real MCP server with the behaviours the demo server lacks, for the MCP tests.

    python -m tests.runtime.tools.lab_server              # stdio
    python -m tests.runtime.tools.lab_server --http PORT  # streamable HTTP on 127.0.0.1
    python -m tests.runtime.tools.lab_server --no-tools   # only resources and prompts
    python -m tests.runtime.tools.lab_server --tag T      # T in its command line, to find it

Tools:
- `book(party)`: asks the client for a date (a form: `elicitation/create`, or on
  2026-07-28 an `InputRequiredResult`) and says what it got: "booked for …", or "not
  booked: the client answered decline".
- `client()`: what the client said about itself: clientInfo and declared capabilities.
- `work(seconds)`: appends its pid to `$LAB_PIDFILE` (when set), then works (blocking, in
  a thread, as much real server code does) for `seconds`; a server in that state outlives
  an abrupt end of its client's stdin until the work is done.
- `text(size)`: `size` characters of text with quotes, newlines and non-ASCII characters.
- `picture()`: a PNG; `broken()`: an `isError` result.
- `quote(symbol)` (read-only, openWorldHint true) and `lookup(key)` (read-only,
  openWorldHint false): each answer numbers the call, so a reused answer shows.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from tools.mcp_servers.orders_server import label_png

server = MCPServer("lab", log_level="WARNING")


class BookingDate(BaseModel):
    date: str = Field(description="The day, as YYYY-MM-DD")


QUESTION = "Which date should the table be booked for?"


@server.tool()
async def book(party: int, ctx: Context) -> Any:
    """Book a table for `party` people (asks which date)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:  # a request to the client
        answer = await ctx.elicit(QUESTION, schema=BookingDate)
        if answer.action == "accept":
            return f"booked for {answer.data.date}"
        return f"not booked: the client answered {answer.action}"
    responses = ctx.input_responses  # 2026-07-28: ask in the result, read the retry
    if not responses:
        form = types.ElicitRequestFormParams(
            message=QUESTION, requested_schema=BookingDate.model_json_schema()
        )
        ask = {"date": types.ElicitRequest(params=form)}
        return types.InputRequiredResult(input_requests=ask, request_state="book")
    reply = responses["date"]
    assert isinstance(reply, types.ElicitResult)
    if reply.action == "accept" and reply.content:
        return f"booked for {reply.content['date']}"
    return f"not booked: the client answered {reply.action}"


@server.tool()
def client(ctx: Context) -> dict[str, Any]:
    """What the connected client declared: its name, version and capabilities."""
    session = ctx.request_context.session
    params = session.client_params
    capabilities = session.client_capabilities
    return {
        "name": params.client_info.name if params else None,
        "version": params.client_info.version if params else None,
        "capabilities": capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
        if capabilities
        else None,
    }


@server.tool()
def work(seconds: float) -> str:
    """Work for a while (blocking)."""
    pidfile = os.environ.get("LAB_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as out:
            out.write(f"{os.getpid()}\n")
    time.sleep(seconds)
    return f"worked {seconds:g}s"


def essay(size: int) -> str:
    """`size` characters of text that JSON would escape: quotes, newlines, accents."""
    line = 'Line "{n}": café, naïve, 東京 — tab\there.\n'
    text = "".join(line.format(n=n) for n in range(size // 20 + 1))
    return text[:size]


@server.tool()
def text(size: int) -> str:
    """A long text (quotes, newlines and non-ASCII characters included)."""
    return essay(size)


@server.tool()
def picture() -> Image:
    """A small PNG."""
    return Image(data=label_png("LAB"), format="png")


@server.tool()
def broken() -> str:
    """Always fails (an isError result)."""
    raise ToolError("the lab is closed")


_CALLS = itertools.count(1)


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=True))
def quote(symbol: str) -> str:
    """Today's price of a symbol (the open world: it changes)."""
    return f"{symbol}: call {next(_CALLS)}"


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False))
def lookup(key: str) -> str:
    """A value of the lab's own table (a closed world)."""
    return f"{key}: call {next(_CALLS)}"


def resources_only() -> Any:
    """A server that offers documents and prompts but no tools at all."""
    from mcp.server.lowlevel import Server

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        doc = types.Resource(uri="lab://handbook", name="handbook", mime_type="text/plain")
        return types.ListResourcesResult(resources=[doc])

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="greet")])

    return Server("docs", on_list_resources=list_resources, on_list_prompts=list_prompts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--no-tools", action="store_true")
    parser.add_argument("--tag", help="ignored: lets a test find this process")
    args = parser.parse_args()
    if args.no_tools:
        import anyio
        from mcp.server.stdio import stdio_server

        low = resources_only()

        async def serve() -> None:
            async with stdio_server() as (read, write):
                await low.run(read, write, low.create_initialization_options())

        anyio.run(serve)
    elif args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
