"""Built-in tools. `agent_clarify` is special: the loop pauses on it instead of calling it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from runtime.messages import CLARIFY_TOOL
from runtime.tools.base import FunctionTool, Tool, ToolContext, ToolError

CLARIFY = CLARIFY_TOOL

CLARIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question for the user."},
        "reason": {"type": "string", "description": "Why you cannot proceed without it."},
    },
    "required": ["question"],
}


async def _never(arguments: dict[str, Any], ctx: ToolContext) -> Any:  # pragma: no cover
    raise ToolError("agent_clarify is handled by the loop")


def clarify_tool() -> FunctionTool:
    return FunctionTool(
        name=CLARIFY,
        description=(
            "Ask the user a question when you cannot proceed without information only they "
            "have. The run pauses until they answer; their answer is this tool's result. "
            "Do not use it to confirm a clear request."
        ),
        input_schema=CLARIFY_SCHEMA,
        func=_never,
        effect="read_only",
    )


async def _time_date(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    zone_name = arguments.get("timezone") or "UTC"
    try:
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(zone_name)
    except Exception as exc:  # ZoneInfoNotFoundError, ValueError
        raise ToolError(f"unknown time zone {zone_name!r}") from exc
    now = datetime.fromtimestamp(ctx.now() if ctx.now else time.time(), UTC).astimezone(zone)
    return {
        "datetime": now.isoformat(timespec="seconds"),
        "date": now.date().isoformat(),
        "weekday": now.strftime("%A"),
        "timezone": zone_name,
    }


def time_date_tool() -> FunctionTool:
    return FunctionTool(
        name="get_time_date",
        description="The current date and time, in UTC or a given IANA time zone.",
        input_schema={
            "type": "object",
            "properties": {"timezone": {"type": "string", "description": "e.g. Europe/Paris"}},
        },
        func=_time_date,
    )


class ToolListing(dict[str, Tool]):
    """The tools an agent is offered (name → tool), and what it selected that this run could
    not offer: MCP servers (or some of their tools) as McpFailure-like `(server, error)`."""

    def __init__(self, tools: dict[str, Tool], unavailable: Iterable[Any] = ()):
        super().__init__(tools)
        self.unavailable = list(unavailable)


def list_tools_tool(tools: Callable[[], dict[str, Tool]]) -> FunctionTool:
    """Every tool offered, then every selected MCP server that is unavailable in this run
    (down, refused, no tools, or tools left out), so the model knows what it lacks and why."""

    async def listing(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        offered = tools()
        entries: list[dict[str, str]] = [
            {"name": t.name, "description": t.description} for t in offered.values()
        ]
        for missing in getattr(offered, "unavailable", []):
            entries.append({"name": f"mcp:{missing.server}", "unavailable": missing.error})
        return entries

    return FunctionTool(
        name="list_tools_available",
        description=(
            "List the tools you can use, with their descriptions, and the tool servers that "
            "are unavailable in this run, with the reason."
        ),
        input_schema={"type": "object", "properties": {}},
        func=listing,
    )
