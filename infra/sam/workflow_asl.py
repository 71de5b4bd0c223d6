"""A workflow's state machine (Amazon States Language), as plain data.

Per step, in order:

    <id>-Plan (Task: plan)  →  <id>-Go (Choice)  →  <id>-Runs (Map)  →  <id>-Collect (Task)
        →  <id>-Next (Choice: again → Runs, repeat → Plan, fail → Failed, else next step)

`<id>-Runs` is a Map state over the run indexes `plan` returned (branches of a parallel step,
elements of a map step — with the step's `max_concurrency` — or the single run of an agent or
loop step). Each iteration is one task that waits on its token (`run_item`): the step run
carries the token, and its end sends it back, so a run waiting a day for a person holds the
workflow without any polling. As a safety net for a lost wake-up, the wait times out after
RECHECK_SECONDS and looks at the run (`recheck`), waiting again while it is not finished.

Only ids and small routing values cross the state machine (the workflow run id, step ids,
indexes); inputs and results live in the store. The tasks run in the workflow's own function
(`${WorkflowFunctionArn}`), whose role may start exactly its steps' agents' runs.
"""

from __future__ import annotations

from typing import Any

from infra.sam.asl import RETRY, THROTTLED, TRANSIENT
from runtime.spec import AgentfnSpec
from runtime.spec.workflows import WorkflowStep

FUNCTION = "${WorkflowFunctionArn}"  # filled by DefinitionSubstitutions
RECHECK_SECONDS = 6 * 3600
_TASK_RETRY = [r for r in RETRY if r["ErrorEquals"] != ["RunLeased"]]
_CATCH = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "MarkFailed"}]


def _payload(action: str, **extra: Any) -> dict[str, Any]:
    return {"action": action, "workflow_run_id.$": "$.workflow_run_id", **extra}


def _task(
    action: str, next_state: str | None, result_path: str | None, **extra: Any
) -> dict[str, Any]:
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": FUNCTION, "Payload": _payload(action, **extra)},
        "ResultSelector": {"answer.$": "$.Payload"},
        "ResultPath": result_path,
        "Retry": _TASK_RETRY,
        "Catch": _CATCH,
    }
    if result_path is None:
        del state["ResultSelector"]
    if next_state is None:
        state["End"] = True
    else:
        state["Next"] = next_state
    return state


def _iteration(step: WorkflowStep) -> dict[str, Any]:
    """One step run: start it and wait for its end (the token is on the run)."""
    item = {"workflow_run_id.$": "$.workflow_run_id", "step": step.id, "item.$": "$.item"}
    wait = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {
            "FunctionName": FUNCTION,
            "Payload": {"action": "run_item", **item, "task_token.$": "$$.Task.Token"},
        },
        "TimeoutSeconds": RECHECK_SECONDS,
        "ResultPath": None,
        "Retry": [THROTTLED, TRANSIENT],
        "Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": "Recheck"}],
        "End": True,
    }
    recheck = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": FUNCTION, "Payload": {"action": "recheck", **item}},
        "ResultSelector": {"done.$": "$.Payload.done"},
        "ResultPath": "$.check",
        "Retry": _TASK_RETRY,
        "Next": "Finished",
    }
    finished = {
        "Type": "Choice",
        "Choices": [{"Variable": "$.check.done", "BooleanEquals": True, "Next": "Done"}],
        "Default": "Wait",
    }
    return {
        "StartAt": "Wait",
        "States": {
            "Wait": wait,
            "Recheck": recheck,
            "Finished": finished,
            "Done": {"Type": "Succeed"},
        },
    }


def _step_states(step: WorkflowStep, after: str) -> dict[str, Any]:
    name = step.id
    concurrency = step.map.max_concurrency if step.map is not None else 0  # 0: all at once
    return {
        f"{name}-Plan": _task("plan", f"{name}-Go", "$.plan", step=name),
        f"{name}-Go": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.plan.answer.stop", "BooleanEquals": True, "Next": "Failed"},
                {"Variable": "$.plan.answer.run", "BooleanEquals": True, "Next": f"{name}-Runs"},
            ],
            "Default": after,
        },
        f"{name}-Runs": {
            "Type": "Map",
            "ItemsPath": "$.plan.answer.items",
            "MaxConcurrency": concurrency,
            "Parameters": {"workflow_run_id.$": "$.workflow_run_id", "item.$": "$$.Map.Item.Value"},
            "Iterator": _iteration(step),
            "ResultPath": None,
            "Catch": _CATCH,
            "Next": f"{name}-Collect",
        },
        f"{name}-Collect": _task("collect", f"{name}-Next", "$.plan", step=name),
        f"{name}-Next": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.plan.answer.next", "StringEquals": "again", "Next": f"{name}-Runs"},
                {
                    "Variable": "$.plan.answer.next",
                    "StringEquals": "repeat",
                    "Next": f"{name}-Plan",
                },
                {"Variable": "$.plan.answer.next", "StringEquals": "fail", "Next": "Failed"},
                {"Variable": "$.plan.answer.next", "StringEquals": "stop", "Next": "Failed"},
            ],
            "Default": after,
        },
    }


def definition(spec: AgentfnSpec, workflow: str) -> dict[str, Any]:
    config = spec.workflows[workflow]
    states: dict[str, Any] = {}
    for i, step in enumerate(config.steps):
        after = f"{config.steps[i + 1].id}-Plan" if i + 1 < len(config.steps) else "Finish"
        states.update(_step_states(step, after))
    states["Finish"] = _task("finish", "Succeeded", None)
    states["MarkFailed"] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": FUNCTION,
            "Payload": _payload("fail", **{"error.$": "$.error"}),
        },
        "Retry": [THROTTLED, TRANSIENT],
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.mark_error", "Next": "Failed"}],
        "ResultPath": None,
        "Next": "Failed",
    }
    states["Succeeded"] = {"Type": "Succeed"}
    states["Failed"] = {
        "Type": "Fail",
        "Error": "WorkflowFailed",
        "Cause": "GET /workflow-runs/{workflow_run_id} holds the failed step and its error.",
    }
    return {
        "Comment": f"agentfn workflow {workflow!r}: {config.description}"[:200],
        "StartAt": f"{config.steps[0].id}-Plan",
        "States": states,
    }
