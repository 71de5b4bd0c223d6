"""A workflow's state machine (Amazon States Language), as plain data.

Per step, in order:

    <id>-Plan (Task: plan)  →  <id>-Go (Choice)  →  <id>-Runs (Map)  →  <id>-Collect (Task)
        →  <id>-Next (Choice: again → Runs, repeat → Plan, fail → Failed, else next step)

(an `llm` step: <id>-Plan → <id>-Go → <id>-Call (Task: llm, the one model call) → <id>-Next)
and inside `<id>-Runs`, one iteration: <id>-Wait → (timed out) <id>-Recheck → <id>-Finished
(Choice) → <id>-Wait again, or <id>-Done.

State names: the Amazon States Language wants every name unique across the whole machine,
nested Map iterators included, and at most 80 characters. So every state of a step carries
the step's id (`state_name`): step ids are unique, and the roles (`Plan`, `Wait`, …) hold no
`-`, so two steps' names can never meet, nor meet the machine's own (`Finish`,
`MarkFailed`, `Succeeded`, `Failed`: no `-`). Names use only `A-Za-z0-9_-`, the characters
CloudWatch logging accepts. An id too long for its role is cut and given a short hash of the
whole id, so the name stays deterministic and readable (never needed while ids are at most
64 characters and roles at most 8: infra/sam/asl_check.py would refuse a clash anyway).

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

import hashlib
from typing import Any

from infra.sam import asl_check
from infra.sam.asl import RETRY, THROTTLED, TRANSIENT
from infra.sam.asl_check import MAX_STATE_NAME
from runtime.spec import AgentfnSpec
from runtime.spec.workflows import WorkflowStep

FUNCTION = "${WorkflowFunctionArn}"  # filled by DefinitionSubstitutions
RECHECK_SECONDS = 6 * 3600
_TASK_RETRY = [r for r in RETRY if r["ErrorEquals"] != ["RunLeased"]]
_CATCH = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "MarkFailed"}]
_HASH_CHARS = 8


def state_name(step_id: str, role: str) -> str:
    """`<step id>-<role>`, at most MAX_STATE_NAME characters: a longer id keeps its head and
    gains a hash of the whole id, so distinct ids do not share a name."""
    name = f"{step_id}-{role}"
    if len(name) <= MAX_STATE_NAME:
        return name
    digest = hashlib.sha256(step_id.encode()).hexdigest()[:_HASH_CHARS]
    keep = MAX_STATE_NAME - len(role) - _HASH_CHARS - 2
    return f"{step_id[:keep]}-{digest}-{role}"


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
    wait_name, recheck_name = state_name(step.id, "Wait"), state_name(step.id, "Recheck")
    finished_name, done_name = state_name(step.id, "Finished"), state_name(step.id, "Done")
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
        "Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": recheck_name}],
        "End": True,
    }
    recheck = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": FUNCTION, "Payload": {"action": "recheck", **item}},
        "ResultSelector": {"done.$": "$.Payload.done"},
        "ResultPath": "$.check",
        "Retry": _TASK_RETRY,
        "Next": finished_name,
    }
    finished = {
        "Type": "Choice",
        "Choices": [{"Variable": "$.check.done", "BooleanEquals": True, "Next": done_name}],
        "Default": wait_name,
    }
    return {
        "StartAt": wait_name,
        "States": {
            wait_name: wait,
            recheck_name: recheck,
            finished_name: finished,
            done_name: {"Type": "Succeed"},
        },
    }


def _planned(step: WorkflowStep, first: str, after: str) -> dict[str, Any]:
    """Every step's start: plan it (its `when`, its items), then fail, skip to `after`, or
    go on to its `first` state."""
    plan, go = state_name(step.id, "Plan"), state_name(step.id, "Go")
    return {
        plan: _task("plan", go, "$.plan", step=step.id),
        go: {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.plan.answer.stop", "BooleanEquals": True, "Next": "Failed"},
                {"Variable": "$.plan.answer.run", "BooleanEquals": True, "Next": first},
            ],
            "Default": after,
        },
    }


def _llm_states(step: WorkflowStep, after: str) -> dict[str, Any]:
    """An `llm` step: plan (its `when`), the call, then go on or fail as `collect` says."""
    call, decide = state_name(step.id, "Call"), state_name(step.id, "Next")
    return {
        **_planned(step, call, after),
        call: _task("llm", decide, "$.plan", step=step.id),
        decide: {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.plan.answer.next", "StringEquals": "fail", "Next": "Failed"},
                {"Variable": "$.plan.answer.next", "StringEquals": "stop", "Next": "Failed"},
            ],
            "Default": after,
        },
    }


def _step_states(step: WorkflowStep, after: str) -> dict[str, Any]:
    if step.llm is not None:
        return _llm_states(step, after)
    plan, runs = state_name(step.id, "Plan"), state_name(step.id, "Runs")
    collect, decide = state_name(step.id, "Collect"), state_name(step.id, "Next")
    concurrency = step.map.max_concurrency if step.map is not None else 0  # 0: all at once
    return {
        **_planned(step, runs, after),
        runs: {
            "Type": "Map",
            "ItemsPath": "$.plan.answer.items",
            "MaxConcurrency": concurrency,
            "Parameters": {"workflow_run_id.$": "$.workflow_run_id", "item.$": "$$.Map.Item.Value"},
            "Iterator": _iteration(step),
            "ResultPath": None,
            "Catch": _CATCH,
            "Next": collect,
        },
        collect: _task("collect", decide, "$.plan", step=step.id),
        decide: {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.plan.answer.next", "StringEquals": "again", "Next": runs},
                {
                    "Variable": "$.plan.answer.next",
                    "StringEquals": "repeat",
                    "Next": plan,
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
        after = (
            state_name(config.steps[i + 1].id, "Plan") if i + 1 < len(config.steps) else "Finish"
        )
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
    machine = {
        "Comment": f"agentfn workflow {workflow!r}: {config.description}"[:200],
        "StartAt": state_name(config.steps[0].id, "Plan"),
        "States": states,
    }
    return asl_check.checked(machine, f"workflow {workflow!r}")
