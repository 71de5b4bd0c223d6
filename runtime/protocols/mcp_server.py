"""The MCP server at /mcp: one tool per agent served over MCP (`protocols: {mcp: true}`),
built with the official `mcp` SDK's low-level Server, spoken over streamable HTTP in its
stateless, JSON-response mode (one POST, one answer: what a Lambda behind API Gateway can
do; no session to keep between requests).

A call starts a run of the agent with the tool's `input` (and `session_id`, to go on with a
conversation) and waits for it within the request's time. The answer is the run's answer
(text content; an object answer is the structured content too). A run that waits for a
person, or is still working when the request's time is spent, is not an error: the result
names the run, what it waits for, and how to decide (REST, CLI or A2A), so an MCP client
that cannot answer elicitations still has an honest way on.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from runtime.protocols import mcp_workflows
from runtime.protocols.mcp_answers import answered, error
from runtime.protocols.waiting import waiting_view

MAX_WAIT_SECONDS = 25.0  # API Gateway gives up at 29 s
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "minLength": 1, "description": "What the agent should do"},
        "session_id": {
            "type": "string",
            "pattern": r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
            "description": "Go on with this session's conversation (the result names it)",
        },
    },
    "required": ["input"],
    "additionalProperties": False,
}


def served(spec: Any) -> list[str]:
    return [name for name in spec.agents if spec.serves(name, "mcp")]


def tools(spec: Any) -> list[types.Tool]:
    return [
        types.Tool(
            name=name,
            description=spec.agents[name].description,
            input_schema=INPUT_SCHEMA,
            annotations=types.ToolAnnotations(title=f"agentfn agent {name}"),
        )
        for name in served(spec)
    ]


def arguments_problem(arguments: dict[str, Any]) -> str | None:
    """What is wrong with a call's arguments (naming the key), None when they are fine."""
    import re

    extra = sorted(set(arguments) - {"input", "session_id"})
    if extra:
        return f"arguments.{extra[0]}: unknown (known: input, session_id)"
    text = arguments.get("input")
    if not isinstance(text, str) or not text.strip():
        return "arguments.input: a non-empty string is required"
    session = arguments.get("session_id")
    if session is not None and (
        not isinstance(session, str)
        or not re.match(INPUT_SCHEMA["properties"]["session_id"]["pattern"], session)
    ):
        return "arguments.session_id: " + INPUT_SCHEMA["properties"]["session_id"]["pattern"]
    return None


def call_result(result: dict[str, Any]) -> types.CallToolResult:
    """The tool's answer for a run's result (the API's result contract)."""
    status, run_id = result["status"], result["run_id"]
    ids = {"run_id": run_id, "session_id": result.get("session_id"), "status": status}
    if status == "succeeded":
        return answered(result.get("result"), ids)
    if status in ("failed", "cancelled"):
        code, why = result.get("error_code"), result.get("error_message")
        return error(f"run {run_id} {status}: {code}: {why}")
    waiting = waiting_view(result)
    if waiting is not None:
        who = waiting["run_id"]
        if waiting.get("clarification"):
            question = waiting["clarification"]["question"]
            how = (
                f'POST /runs/{who}/reply {{"input": "…"}}, `agentfn reply {who} "…"`, or call '
                f"this tool again with session_id {result.get('session_id')} and the answer"
            )
            text = f"Run {run_id} waits for an answer: {question}\nAnswer with {how}."
        else:
            calls = ", ".join(
                f"{p['tool_name']}({json.dumps(p.get('inputs'), sort_keys=True)})"
                for p in waiting["pending_approval"]
            )
            how = (
                f'POST /runs/{who}/approval {{"approved": true|false}}, '
                f"`agentfn approve {who}` (or --deny), or the A2A task {run_id}"
            )
            text = f"Run {run_id} waits for a person to approve {calls}.\nDecide with {how}."
        data = {**ids, "waiting": {k: v for k, v in waiting.items() if k != "reasoning"}}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=data,
            meta={"agentfn": ids},
        )
    text = (
        f"Run {run_id} is still {status} after this request's time; read its result with "
        f"GET /runs/{run_id} (or `agentfn status {run_id}`)."
    )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=ids,
        meta={"agentfn": ids},
    )


def build_server(service: Any, *, time_left: float | None) -> Any:
    """A low-level MCP Server over the RunService for one request."""
    import time

    import anyio
    from mcp.server.lowlevel.server import Server

    spec = service.engine.spec
    deadline = time.monotonic() + (time_left if time_left is not None else 30.0)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[*tools(spec), *mcp_workflows.tools(spec)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        workflow = mcp_workflows.served(spec).get(params.name)
        if workflow is not None:
            wait = max(0.0, min(MAX_WAIT_SECONDS, deadline - time.monotonic() - 4))
            arguments = dict(params.arguments or {})
            return await anyio.to_thread.run_sync(
                lambda: mcp_workflows.run(service, workflow, arguments, wait)
            )
        if params.name not in served(spec):
            return error(f"name: no agent {params.name!r} is served over MCP here")
        arguments = dict(params.arguments or {})
        problem = arguments_problem(arguments)
        if problem is not None:
            return error(problem)
        left = deadline - time.monotonic()
        wait = max(0.0, min(MAX_WAIT_SECONDS, left - 4))

        def run() -> dict[str, Any]:
            from runtime.errors import InvalidRequest

            try:
                code, result = service.start(
                    params.name,
                    arguments["input"],
                    arguments.get("session_id"),
                    wait,
                    time_left=left,
                )
            except InvalidRequest as exc:
                return {"invalid": str(exc)}
            return dict(result if code == 200 else service.get(result["run_id"]))

        result = await anyio.to_thread.run_sync(run)
        if "invalid" in result:
            return error(str(result["invalid"]))
        return call_result(result)

    return Server(
        "agentfn",
        version=spec.spec_hash(),
        instructions="Each tool is an agentfn agent: call it with `input` (and `session_id` "
        "to go on with a conversation); the answer is the run's.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
