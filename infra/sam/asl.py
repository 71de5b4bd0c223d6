"""The per-agent state machine (Amazon States Language), as plain data.

Shape: Advance → Route(Choice on status) → {Advance | WaitForApproval* | WaitForInput |
Finish → Succeeded | Failed | Cancelled}. Every payload is ids only (`run_id`), so the
256 KB limit can never be reached; the conversation lives in DynamoDB.

Contract with `handlers/step` (the agent's function), by `action`:
- `advance`  → {run_id, status, wait_seconds}: runs steps until finished, paused or out of time.
- `wait`     → stores the task token of a WaitFor* state on the run head (callback pattern).
- `timeout`  → a wait timed out: blocks the pending call(s) (APPROVAL_TIMEOUT) and resumes.
- `result`   → the run's result contract (the execution's output).
- `fail`     → marks the run failed after an unrecoverable task error.

`wait_seconds` lets an agent whose approval rules have different timeouts pick the
WaitForApproval state compiled with the matching `TimeoutSeconds`.
"""

from __future__ import annotations

from typing import Any

from runtime.spec import AgentfnSpec

FUNCTION = "${AgentFunctionArn}"  # filled by DefinitionSubstitutions

_LAMBDA_TRANSIENT = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
]

RETRY = [
    {
        # Another worker holds the run's lease (a crashed invocation's lease runs out).
        "ErrorEquals": ["RunLeased"],
        "IntervalSeconds": 5,
        "MaxAttempts": 40,
        "BackoffRate": 1.2,
        "MaxDelaySeconds": 30,
    },
    {
        "ErrorEquals": _LAMBDA_TRANSIENT,
        "IntervalSeconds": 1,
        "MaxAttempts": 6,
        "BackoffRate": 2.0,
        "JitterStrategy": "FULL",
    },
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
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": FUNCTION,
            "Payload": {"action": action, "run_id.$": "$.run_id", **extra},
        },
        "OutputPath": "$.Payload",
        "Retry": RETRY,
        "Catch": CATCH_ALL,
        "Next": next_state,
    }


def _wait(kind: str, timeout: int, on_timeout: str) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {
            "FunctionName": FUNCTION,
            "Payload": {
                "action": "wait",
                "kind": kind,
                "run_id.$": "$.run_id",
                "task_token.$": "$$.Task.Token",
            },
        },
        "TimeoutSeconds": timeout,
        "ResultPath": None,
        "Retry": RETRY[1:2],
        "Catch": [
            {"ErrorEquals": ["States.Timeout"], "ResultPath": None, "Next": on_timeout},
            *CATCH_ALL,
        ],
        "Next": "Advance",
    }


def approval_timeouts(spec: AgentfnSpec, agent: str) -> list[int]:
    """Distinct approval timeouts of an agent in seconds; the first is its default."""
    config = spec.agents[agent]
    default = int(spec.defaults.approval_timeout)
    timeouts = [default] + [int(r.timeout) for r in config.approval if r.timeout is not None]
    return sorted(set(timeouts), key=timeouts.index)


def approval_state_name(seconds: int, default: int) -> str:
    return "WaitForApproval" if seconds == default else f"WaitForApproval{seconds}s"


def definition(spec: AgentfnSpec, agent: str) -> dict[str, Any]:
    config = spec.agents[agent]
    timeouts = approval_timeouts(spec, agent)
    default = timeouts[0]
    input_timeout = int(config.input_timeout or spec.defaults.input_timeout)

    choices: list[dict[str, Any]] = [
        {"Variable": "$.status", "StringEquals": "running", "Next": "Advance"},
    ]
    for seconds in timeouts[1:]:
        choices.append(
            {
                "And": [
                    {"Variable": "$.status", "StringEquals": "awaiting_approval"},
                    {"Variable": "$.wait_seconds", "NumericEquals": seconds},
                ],
                "Next": approval_state_name(seconds, default),
            }
        )
    choices += [
        {"Variable": "$.status", "StringEquals": "awaiting_approval", "Next": "WaitForApproval"},
        {"Variable": "$.status", "StringEquals": "awaiting_input", "Next": "WaitForInput"},
        {"Variable": "$.status", "StringEquals": "succeeded", "Next": "Finish"},
        {"Variable": "$.status", "StringEquals": "cancelled", "Next": "Cancelled"},
        {"Variable": "$.status", "StringEquals": "failed", "Next": "Failed"},
    ]

    states: dict[str, Any] = {
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
    }
    for seconds in timeouts:
        states[approval_state_name(seconds, default)] = _wait(
            "approval", seconds, "ApprovalTimedOut"
        )
    states["WaitForInput"] = _wait("input", input_timeout, "InputTimedOut")
    states["ApprovalTimedOut"] = _invoke("timeout", "Route", kind="approval")
    states["InputTimedOut"] = _invoke("timeout", "Route", kind="input")
    states["Finish"] = {**_invoke("result", "Succeeded"), "Catch": CATCH_ALL}
    states["MarkFailed"] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {
            "FunctionName": FUNCTION,
            "Payload": {"action": "fail", "run_id.$": "$.run_id", "error.$": "$.error"},
        },
        "Retry": RETRY[1:2],
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.mark_error", "Next": "Failed"}],
        "ResultPath": None,
        "Next": "Failed",
    }
    states["Succeeded"] = {"Type": "Succeed"}
    states["Failed"] = {
        "Type": "Fail",
        "Error": "RunFailed",
        "Cause": "The run failed; GET /runs/{run_id} holds error_code and error_message.",
    }
    states["Cancelled"] = {
        "Type": "Fail",
        "Error": "RunCancelled",
        "Cause": "The run was cancelled.",
    }
    return {
        "Comment": f"agentfn agent {agent!r}: advance the run; wait for people when it pauses.",
        "StartAt": "Advance",
        "States": states,
    }
