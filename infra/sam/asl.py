"""The per-agent state machine (Amazon States Language), as plain data.

Shape: Start → Route(Choice) → {Advance → Route | WaitForApproval | WaitForInput |
WaitForChildren | ContinueAsNew → Continued | Succeeded | Failed | Cancelled}.

`Start` is the run's first advance, in the state machine's own agent's function (named in
the definition). Every later task but MarkFailed runs in the function of the agent that has
the run's conversation (`$.function`, returned by each task): a handoff moves the run to its
new agent's function, so each agent's code keeps its own role and grants. The state
machine's role may invoke exactly the functions of its agent's handoff team.

The execution input is `{"run_id": …}` and nothing else: what a first task lacks (`loops`,
`function`) the step handler defaults (handlers/step.py), so no Pass state spends a
transition on defaults — a run without pauses is Start → Route → Succeeded.

What crosses the state machine is ids and small routing values only (`run_id`, `status`,
`wait_seconds`, `loops`, `continue`): results are read from the store, so Step Functions'
256 KB state limit can never be reached whatever a run holds. The execution's output is
that small record; `GET /runs/{run_id}` has the result.

Contract with `handlers/step` (the agent's function), by `action`:
- `advance`  → {run_id, function, status, wait_seconds, loops, continue}: runs steps until
               finished, paused or out of time; `loops` counts advances in this execution
               (absent on Start: 0), `function` is where the next task runs (absent on
               Start: the function invoked).
- `wait`     → stores the task token of a WaitFor* state on the run head (callback pattern).
- `timeout`  → a wait timed out: blocks the pending call(s) (APPROVAL_TIMEOUT) and resumes.
- `continue` → after MAX_LOOPS advances, starts the run's next execution; this one ends.
- `fail`     → marks the run failed after an unrecoverable task error.

Waits use `TimeoutSecondsPath`: `wait_seconds` is what is left of the run's wait, so an
execution restarted by the sweeper waits only the rest, and one wait state serves every
approval rule's timeout.

History: Step Functions stops an execution at 25,000 history events. `max_events_per_loop`
computes the worst case of one loop from this definition (every retry used), and the run
continues in a fresh execution after MAX_LOOPS loops; a test proves the product stays under
the limit.
"""

from __future__ import annotations

from typing import Any

from infra.sam import asl_check
from runtime.service import MAX_LOOPS
from runtime.spec import AgentfnSpec

FUNCTION = "${AgentFunctionArn}"  # filled by DefinitionSubstitutions
HISTORY_LIMIT = 25_000

_LAMBDA_TRANSIENT = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.ClientExecutionTimeoutException",
]

#: Throttling (reserved concurrency, account limits) is retried for minutes, with jitter, so
#: a burst of runs waits for capacity instead of failing.
THROTTLED = {
    "ErrorEquals": ["Lambda.TooManyRequestsException"],
    "IntervalSeconds": 2,
    "MaxAttempts": 12,
    "BackoffRate": 2.0,
    "MaxDelaySeconds": 60,
    "JitterStrategy": "FULL",
}
TRANSIENT = {
    "ErrorEquals": _LAMBDA_TRANSIENT,
    "IntervalSeconds": 1,
    "MaxAttempts": 6,
    "BackoffRate": 2.0,
    "JitterStrategy": "FULL",
}
RETRY = [
    {
        # Another worker holds the run's lease; a crashed one's lease runs out in ~2 minutes.
        "ErrorEquals": ["RunLeased"],
        "IntervalSeconds": 5,
        "MaxAttempts": 12,
        "BackoffRate": 1.5,
        "MaxDelaySeconds": 30,
        "JitterStrategy": "FULL",
    },
    THROTTLED,
    TRANSIENT,
    {
        # A crashed or timed-out step: the run resumes from its persisted state, so a retry
        # never repeats completed work.
        "ErrorEquals": ["States.TaskFailed"],
        "IntervalSeconds": 2,
        "MaxAttempts": 2,
        "BackoffRate": 2.0,
    },
]

CATCH_ALL = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "MarkFailed"}]


def _invoke(action: str, next_state: str, **extra: Any) -> dict[str, Any]:
    """A task of the function that has the run's conversation now (`$.function`: the entry
    agent's, or the agent it was handed to)."""
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName.$": "$.function",
            "Payload": {
                "action": action,
                "run_id.$": "$.run_id",
                "loops.$": "$.loops",
                "function.$": "$.function",
                **extra,
            },
        },
        "OutputPath": "$.Payload",
        "Retry": RETRY,
        "Catch": CATCH_ALL,
        "Next": next_state,
    }


def _wait(kind: str, on_timeout: str) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {
            "FunctionName.$": "$.function",
            "Payload": {
                "action": "wait",
                "kind": kind,
                "run_id.$": "$.run_id",
                "task_token.$": "$$.Task.Token",
            },
        },
        "TimeoutSecondsPath": "$.wait_seconds",
        "ResultPath": None,
        "Retry": [THROTTLED, TRANSIENT],
        "Catch": [
            {"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": on_timeout},
            *CATCH_ALL,
        ],
        "Next": "Advance",
    }


def _start() -> dict[str, Any]:
    """The first advance: this state machine's own agent's function, named statically, and
    only the run id (the handler defaults `loops` to 0 and `function` to its own ARN)."""
    state = _invoke("advance", "Route")
    state["Parameters"] = {
        "FunctionName": FUNCTION,
        "Payload": {"action": "advance", "run_id.$": "$.run_id"},
    }
    return state


def definition(spec: AgentfnSpec, agent: str) -> dict[str, Any]:
    choices: list[dict[str, Any]] = [
        {
            "And": [
                {"Variable": "$.continue", "BooleanEquals": True},
                {"Not": {"Variable": "$.status", "StringEquals": "succeeded"}},
                {"Not": {"Variable": "$.status", "StringEquals": "failed"}},
                {"Not": {"Variable": "$.status", "StringEquals": "cancelled"}},
            ],
            "Next": "ContinueAsNew",
        },
        {"Variable": "$.status", "StringEquals": "running", "Next": "Advance"},
        {"Variable": "$.status", "StringEquals": "awaiting_approval", "Next": "WaitForApproval"},
        {"Variable": "$.status", "StringEquals": "awaiting_input", "Next": "WaitForInput"},
        {"Variable": "$.status", "StringEquals": "awaiting_children", "Next": "WaitForChildren"},
        {"Variable": "$.status", "StringEquals": "succeeded", "Next": "Succeeded"},
        {"Variable": "$.status", "StringEquals": "cancelled", "Next": "Cancelled"},
        {"Variable": "$.status", "StringEquals": "failed", "Next": "Failed"},
    ]
    states: dict[str, Any] = {
        "Start": _start(),
        "Advance": _invoke("advance", "Route"),
        "Route": {"Type": "Choice", "Choices": choices, "Default": "UnknownStatus"},
        # A Choice cannot hand MarkFailed an `error`; a missing path would be an uncatchable
        # States.Runtime error, so this Pass state supplies one.
        "UnknownStatus": {
            "Type": "Pass",
            "Result": {"Error": "UnknownStatus", "Cause": "The step returned an unknown status."},
            "ResultPath": "$.error",
            "Next": "MarkFailed",
        },
        "WaitForApproval": _wait("approval", "ApprovalTimedOut"),
        "WaitForInput": _wait("input", "InputTimedOut"),
        # Woken by the last child to finish; at the end of the run's data, look once more.
        "WaitForChildren": _wait("children", "Advance"),
        "ApprovalTimedOut": _invoke("timeout", "Route", kind="approval"),
        "InputTimedOut": _invoke("timeout", "Route", kind="input"),
        "ContinueAsNew": _invoke("continue", "Continued"),
        "MarkFailed": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {
                "FunctionName": FUNCTION,
                "Payload": {"action": "fail", "run_id.$": "$.run_id", "error.$": "$.error"},
            },
            # The failure path is retried like the rest (throttling above all), so the stored
            # status matches the execution's; if it still cannot run, the sweeper finds the
            # run without a live execution and settles it.
            "Retry": [THROTTLED, TRANSIENT, {**RETRY[-1], "MaxAttempts": 3}],
            "Catch": [
                {"ErrorEquals": ["States.ALL"], "ResultPath": "$.mark_error", "Next": "Failed"}
            ],
            "ResultPath": None,
            "Next": "Failed",
        },
        "Continued": {"Type": "Succeed", "Comment": "The run goes on in its next execution."},
        "Succeeded": {"Type": "Succeed"},
        "Failed": {
            "Type": "Fail",
            "Error": "RunFailed",
            "Cause": "The run failed; GET /runs/{run_id} holds error_code and error_message.",
        },
        "Cancelled": {
            "Type": "Fail",
            "Error": "RunCancelled",
            "Cause": "The run was cancelled.",
        },
    }
    machine = {
        "Comment": f"agentfn agent {agent!r}: advance the run; wait for people when it pauses.",
        "StartAt": "Start",
        "States": states,
    }
    return asl_check.checked(machine, f"agent {agent!r}")


def _task_events(state: dict[str, Any]) -> int:
    """Worst-case history events of one task state: entered and exited, and for every
    attempt (each retry used to the full) scheduled, started and succeeded/failed, plus the
    callback's token wait."""
    attempts = 1 + sum(int(r.get("MaxAttempts", 3)) for r in state.get("Retry", []))
    per_attempt = 4 if "waitForTaskToken" in state["Resource"] else 3
    return 2 + attempts * per_attempt


def max_events_per_loop(machine: dict[str, Any]) -> int:
    """The most history events one loop (Advance → Route → a wait → its timeout task →
    Route) can add, computed from the definition."""
    states = machine["States"]
    choice = 2  # entered, exited
    wait = max(
        _task_events(states[w]) for w in ("WaitForApproval", "WaitForInput", "WaitForChildren")
    )
    timeout = max(_task_events(states[t]) for t in ("ApprovalTimedOut", "InputTimedOut"))
    return _task_events(states["Advance"]) + choice + wait + timeout + choice


def max_execution_events(machine: dict[str, Any]) -> int:
    """Worst case for one execution: its start, MAX_LOOPS loops, and the way out."""
    states = machine["States"]
    way_out = _task_events(states["ContinueAsNew"]) + _task_events(states["MarkFailed"]) + 4
    return 4 + MAX_LOOPS * max_events_per_loop(machine) + way_out
