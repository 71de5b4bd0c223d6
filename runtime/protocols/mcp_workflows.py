"""Workflows as tools of the MCP server (runtime.protocols.mcp_server), listed when
`defaults.protocols.mcp` is on: `workflow_NAME`, whose input is the workflow's own
(`input_schema`, else `{input}`), started like `POST /workflows/{name}/runs` and waited for
within the request's time; the answer is the workflow's result. A step run that waits for a
person, or a workflow still going when the time is up, is named with how to go on."""

from __future__ import annotations

import time
from typing import Any

import mcp_types as types

from runtime.protocols.mcp_answers import answered, error

PREFIX = "workflow_"
POLL_SECONDS = 0.5
TEXT_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "minLength": 1}},
    "required": ["input"],
    "additionalProperties": False,
}


def served(spec: Any) -> dict[str, str]:
    """Tool name → workflow, when workflows are served over MCP."""
    if not spec.defaults.protocols.mcp:
        return {}
    return {f"{PREFIX}{name}"[:64]: name for name in spec.workflows}


def tools(spec: Any) -> list[types.Tool]:
    return [
        types.Tool(
            name=tool,
            description=spec.workflows[name].description or f"The workflow {name}.",
            input_schema=spec.workflows[name].input_schema or TEXT_INPUT,
            annotations=types.ToolAnnotations(title=f"agentfn workflow {name}"),
        )
        for tool, name in served(spec).items()
    ]


def run(service: Any, name: str, arguments: dict[str, Any], wait: float) -> types.CallToolResult:
    """Start the workflow and wait for it up to `wait` seconds (called in a worker thread)."""
    from runtime.errors import InvalidRequest
    from runtime.workflows.service import WorkflowService

    workflows = WorkflowService(service)
    given: Any = arguments
    if service.engine.spec.workflows[name].input_schema is None:
        if set(arguments) != {"input"} or not isinstance(arguments["input"], str):
            return error("arguments: {input: string} is this workflow's input")
        given = arguments["input"]
    try:
        view = workflows.start(name, given)
    except InvalidRequest as exc:
        return error(str(exc))
    ends = time.monotonic() + wait
    while view["status"] not in ("succeeded", "failed", "cancelled"):
        if _waiting(view) or time.monotonic() + POLL_SECONDS >= ends:
            break
        time.sleep(POLL_SECONDS)
        view = workflows.view(view["workflow_run_id"])
    return _result(view)


def _waiting(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        r
        for step in view["steps"]
        for r in step["runs"]
        if r["status"] in ("awaiting_approval", "awaiting_input")
    ]


def _result(view: dict[str, Any]) -> types.CallToolResult:
    run_id, status = view["workflow_run_id"], view["status"]
    ids = {"workflow_run_id": run_id, "status": status}
    if status == "succeeded":
        return answered(view.get("result"), ids)
    if status in ("failed", "cancelled"):
        return error(
            f"workflow run {run_id} {status}: {view.get('error_code')}: {view.get('error_message')}"
        )
    waiting = _waiting(view)
    if waiting:
        lines = [
            f"step run {r['run_id']} ({r['agent']}) is {r['status']}: decide with POST "
            f"/runs/{r['run_id']}/approval or /reply (or `agentfn approve|reply {r['run_id']}`)"
            for r in waiting
        ]
        text = f"Workflow run {run_id} waits for a person:\n" + "\n".join(lines)
    else:
        text = f"Workflow run {run_id} is still {status}; read it at GET /workflow-runs/{run_id}."
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={**ids, "waiting": waiting},
        meta={"agentfn": ids},
    )
