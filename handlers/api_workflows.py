"""The API's workflow routes (registered by handlers.api's resolver). A workflow run is
started on its state machine and answered at once (202): its steps are agent runs that may
wait for people for as long as they need; `GET /workflow-runs/{id}` follows it.

No `from __future__ import annotations`: Powertools reads these annotations at run time.
"""

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

_workflows: Any = None
_starter: Any = None  # (persistence layer, idempotent start) for that layer


def workflows() -> Any:
    """The WorkflowService over the API's RunService (built once per container)."""
    global _workflows
    from handlers.api_service import the_service
    from runtime.workflows.service import WorkflowService

    runs = the_service()
    if _workflows is None or _workflows.runs is not runs:
        _workflows = WorkflowService(runs)
    return _workflows


def _idempotent_start(layer: Any, ctx: Any) -> Callable[..., Any]:
    """Powertools' idempotent_function around a workflow start, for this persistence layer:
    keyed by [caller, Idempotency-Key], the request is what a retry must repeat (else 422),
    and a retry gets the first workflow run (its current view), not a second one."""
    global _starter
    if _starter is None or _starter[0] is not layer:
        from aws_lambda_powertools.utilities.idempotency.serialization.base import (
            BaseIdempotencySerializer,
        )

        from handlers.api_requests import idempotent

        class FirstRun(BaseIdempotencySerializer):
            def to_dict(self, data: Any) -> dict[str, Any]:
                return {"workflow_run_id": data["workflow_run_id"]}

            def from_dict(self, data: dict[str, Any]) -> Any:
                return workflows().view(data["workflow_run_id"])

        def start_once(*, request: dict[str, Any]) -> Any:
            asked = request["request"]
            return workflows().start(asked["workflow"], asked["input"])

        config, start = idempotent(layer, start_once, FirstRun(), "StartWorkflowRun")
        _starter = (layer, config, start)
    if hasattr(ctx, "get_remaining_time_in_millis"):
        _starter[1].register_lambda_context(ctx)  # an in-progress record expires with the call
    started: Callable[..., Any] = _starter[2]
    return started


def workflow_routes(
    route: Callable[..., Any],
    ok: Any,
    strict: Any,
    name: Any,
    caller: Any,
    key_type: Any,
    *,
    idempotency_layer: Callable[[], Any],
    app_context: Callable[[], Any],
) -> None:
    """Register the workflow routes on handlers.api's resolver; the API hands in its
    Idempotency-Key layer and request context (passed in, so this module never imports
    handlers.api, which imports it)."""
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

    @route("StartWorkflowRun", {202: WorkflowRunView}, 400, 404, 409, 413, 422)
    def start_workflow_run(
        workflow: name, request: Annotated[StartWorkflowRequest, Body()], key: key_type = None
    ) -> Any:
        layer = idempotency_layer() if key is not None else None
        if layer is None:
            return ok(workflows().start(workflow, request.input), 202)
        asked = {"workflow": workflow, "input": request.input}
        start = _idempotent_start(layer, app_context())
        return ok(start(request={"key": [caller(), key], "request": asked}), 202)

    @route("GetWorkflowRun", {200: WorkflowRunView}, 400, 404)
    def get_workflow_run(workflow_run_id: name) -> Any:
        return ok(workflows().view(workflow_run_id))

    @route("CancelWorkflowRun", {200: WorkflowRunView}, 400, 404, 409)
    def cancel_workflow_run(workflow_run_id: name) -> Any:
        return ok(workflows().cancel(workflow_run_id, by=caller()))
