"""The HTTP API's routes: one table read by the API handler and by the template emitter,
so the deployed API Gateway and the code behind it cannot drift apart."""

from __future__ import annotations

from typing import NamedTuple


class Route(NamedTuple):
    name: str  # stable event name in template.yaml
    method: str
    path: str  # API Gateway syntax: {param}
    summary: str


ROUTES: tuple[Route, ...] = (
    Route("StartRun", "POST", "/agents/{agent}/runs", "Start a run (inline up to wait_seconds)"),
    Route("ListAgents", "GET", "/agents", "List the agents of this deployment"),
    Route("GetRun", "GET", "/runs/{run_id}", "A run's status and result"),
    Route("GetRunEvents", "GET", "/runs/{run_id}/events", "A run's events after ?after=N"),
    Route(
        "GetWatchToken",
        "GET",
        "/runs/{run_id}/watch-token",
        "A short-lived token to watch this run live (WebSocket `subscribe`)",
    ),
    Route("Approve", "POST", "/runs/{run_id}/approval", "Decide pending tool call(s)"),
    Route("Reply", "POST", "/runs/{run_id}/reply", "Answer a clarification question"),
    Route("Cancel", "POST", "/runs/{run_id}/cancel", "Cancel a run"),
    # The same operations under the agent's path, so IAM can grant a person rights on some
    # agents only (`execute-api:Invoke` on `…/POST/agents/billing/runs/*/approval`); a run
    # of another agent answers 404 there.
    Route("GetAgentRun", "GET", "/agents/{agent}/runs/{run_id}", "A run of this agent"),
    Route(
        "GetAgentRunEvents",
        "GET",
        "/agents/{agent}/runs/{run_id}/events",
        "Events of a run of this agent",
    ),
    Route(
        "GetAgentRunWatchToken",
        "GET",
        "/agents/{agent}/runs/{run_id}/watch-token",
        "A short-lived token to watch a run of this agent live",
    ),
    Route(
        "ApproveAgentRun",
        "POST",
        "/agents/{agent}/runs/{run_id}/approval",
        "Decide pending tool call(s) of a run of this agent",
    ),
    Route(
        "ReplyAgentRun",
        "POST",
        "/agents/{agent}/runs/{run_id}/reply",
        "Answer a clarification of a run of this agent",
    ),
    Route(
        "CancelAgentRun",
        "POST",
        "/agents/{agent}/runs/{run_id}/cancel",
        "Cancel a run of this agent",
    ),
    Route(
        "DeleteAgentSession",
        "DELETE",
        "/agents/{agent}/sessions/{session_id}",
        "Delete a session of this agent: its runs, messages and cached objects",
    ),
    Route("ListWorkflows", "GET", "/workflows", "List the workflows of this deployment"),
    Route("StartWorkflowRun", "POST", "/workflows/{workflow}/runs", "Start a workflow run"),
    Route(
        "GetWorkflowRun",
        "GET",
        "/workflow-runs/{workflow_run_id}",
        "A workflow run: status, and each step's runs and result",
    ),
    Route(
        "CancelWorkflowRun",
        "POST",
        "/workflow-runs/{workflow_run_id}/cancel",
        "Cancel a workflow run and its step runs",
    ),
    Route("OpenApi", "GET", "/openapi.json", "This API's OpenAPI document"),
)

#: The open protocols' routes (runtime.protocols), in the template only when some agent is
#: served over them (`protocols:`), behind the same auth as the routes above.
A2A_CARD_PATH = "/.well-known/agent-card.json"  # the A2A SDK's well-known path, per agent
PROTOCOL_ROUTES: tuple[Route, ...] = (
    Route("A2aAgentCard", "GET", "/a2a/{agent}" + A2A_CARD_PATH, "An agent's A2A agent card"),
    Route(
        "A2aRpc",
        "POST",
        "/a2a/{agent}",
        "A2A JSON-RPC: SendMessage, GetTask, ListTasks, CancelTask",
    ),
    Route("McpServer", "POST", "/mcp", "MCP (streamable HTTP): the agents as tools"),
)
