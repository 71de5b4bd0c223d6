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
    Route("Approve", "POST", "/runs/{run_id}/approval", "Decide pending tool call(s)"),
    Route("Reply", "POST", "/runs/{run_id}/reply", "Answer a clarification question"),
    Route("Cancel", "POST", "/runs/{run_id}/cancel", "Cancel a run"),
    Route("OpenApi", "GET", "/openapi.json", "This API's OpenAPI document"),
)
