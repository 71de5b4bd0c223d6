"""The API's workflow routes (registered by handlers.api's resolver). A workflow run is
started on its state machine and answered at once (202): its steps are agent runs that may
wait for people for as long as they need; `GET /workflow-runs/{id}` follows it.

No `from __future__ import annotations`: Powertools reads these annotations at run time.
"""

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

_workflows: Any = None


def workflows() -> Any:
    """The WorkflowService over the API's RunService (built once per container)."""
    global _workflows
    from handlers.api import the_service
    from runtime.workflows.service import WorkflowService

    runs = the_service()
    if _workflows is None or _workflows.runs is not runs:
        _workflows = WorkflowService(runs)
    return _workflows


def workflow_routes(
    route: Callable[..., Any], ok: Any, strict: Any, name: Any, caller: Any
) -> None:
    from aws_lambda_powertools.event_handler.openapi.params import Body

    class StartWorkflowRequest(strict):
        model_config = ConfigDict(extra="forbid", strict=False)
        input: Any = Field(
            description="The workflow's input: an object matching its input_schema, or text"
        )

    class WorkflowRunView(BaseModel):
        model_config = ConfigDict(extra="allow")
        workflow_run_id: str
        workflow: str
        status: str
        steps: list[dict[str, Any]]

    @route("ListWorkflows", {200: dict[str, list[dict[str, Any]]]})
    def list_workflows() -> Any:
        return ok({"workflows": workflows().names()})

    @route("StartWorkflowRun", {202: WorkflowRunView}, 400, 404, 413)
    def start_workflow_run(workflow: name, request: Annotated[StartWorkflowRequest, Body()]) -> Any:
        return ok(workflows().start(workflow, request.input), 202)

    @route("GetWorkflowRun", {200: WorkflowRunView}, 400, 404)
    def get_workflow_run(workflow_run_id: name) -> Any:
        return ok(workflows().view(workflow_run_id))

    @route("CancelWorkflowRun", {200: WorkflowRunView}, 400, 404, 409)
    def cancel_workflow_run(workflow_run_id: name) -> Any:
        return ok(workflows().cancel(workflow_run_id, by=caller()))
