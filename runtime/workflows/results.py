"""What a workflow's steps produced, read from their runs (never copied into the workflow's
item), and the workflow run as the API shows it."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from runtime.engine.result import final_result
from runtime.errors import RunNotFound
from runtime.spec.workflows import WorkflowConfig, WorkflowStep
from runtime.structs import dump
from runtime.workflows.records import StepState, WorkflowRun

if TYPE_CHECKING:
    from runtime.engine.loop import Engine


def run_result(engine: Engine, run_id: str) -> Any:
    """A succeeded run's result (text, or the object of an output_schema); else None."""
    try:
        head = engine.store.load_head(run_id)
    except RunNotFound:
        return None
    return final_result(head, engine.store.blobs) if head.status == "succeeded" else None


def has_result(state: StepState) -> bool:
    """Whether the step produced something to read: runs, or an llm step's answer."""
    return bool(state.runs) or state.result_ref is not None


def step_result(step: WorkflowStep, state: StepState, engine: Engine) -> Any:
    """An agent or loop step: its run's result (a loop's latest pass). A parallel or map
    step: the list of its runs' results by branch or element (None where skipped or failed).
    An llm step: its answer (runtime.workflows.llm_step)."""
    if step.llm is not None:
        if state.result_ref is None:
            return None
        return json.loads(engine.store.blobs.get(state.result_ref))
    by_index = {r.index: run_result(engine, r.run_id) for r in state.runs}
    if step.parallel is None and step.map is None:
        return by_index.get(0)
    return [by_index.get(i) for i in range(state.count)]


def workflow_view(run: WorkflowRun, config: WorkflowConfig, engine: Engine) -> dict[str, Any]:
    """GET /workflow-runs/{id}: status, and for each step its status, runs and result."""
    steps = []
    last: Any = None
    for step in config.steps:
        state = run.steps.get(step.id) or StepState()
        runs = []
        for step_run in state.runs:
            status: str = "starting"
            with contextlib.suppress(RunNotFound):
                status = engine.store.load_head(step_run.run_id).status
            runs.append({**dump(step_run), "status": status})
        entry: dict[str, Any] = {
            "id": step.id,
            "kind": step.kind,
            "status": state.status,
            "runs": runs,
        }
        if step.loop is not None:
            entry["iteration"] = state.iteration + (1 if state.runs else 0)
            entry["until_met"] = state.until_met
        if state.skipped:
            entry["skipped_branches"] = state.skipped
        if state.error_code:
            entry["error_code"], entry["error_message"] = state.error_code, state.error_message
        if state.status in ("succeeded", "failed") and has_result(state):
            entry["result"] = step_result(step, state, engine)
            if state.status == "succeeded":
                last = entry["result"]
        steps.append(entry)
    view: dict[str, Any] = {
        "workflow_run_id": run.workflow_run_id,
        "workflow": run.workflow,
        "status": run.status,
        "input": run.input,
        "steps": steps,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
    }
    if run.trigger is not None:  # a schedule, webhook, queue or event started it
        view["trigger"] = dict(run.trigger)
    if run.status == "succeeded":
        view["result"] = last  # the last step that produced one
    if run.error_code:
        view["error_code"], view["error_message"] = run.error_code, run.error_message
        if run.failed_step:
            view["failed_step"] = run.failed_step
    return view
