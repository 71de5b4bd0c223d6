"""Who may touch which data and which workflow: the statements of the agent functions, the
API function and the sweeper.

Data isolation between agents rests on the runtime's key layout (runtime.naming):
- DynamoDB partitions `RUN#{run_id}` (every run id starts with its agent's tag) and
  `SES#{agent}#{session}`: an agent's function gets GetItem/Query/PutItem only where
  `dynamodb:LeadingKeys` matches its own (`ForAllValues:StringLike`). Every action granted
  carries a leading key (no Scan), so the condition always applies.
- S3 keys `bodies/{run_id}/…`, `results/{run_id}…`, `tool-cache/{agent}/…` and the agent's
  storage prefix: GetObject/PutObject on its own prefixes, ListBucket only with an
  `s3:prefix` inside them.
- Agent functions and state machines have fixed names `agentfn-{stack8}-…`, so "this stack's
  agents" is one ARN pattern (fixed size, whatever the number of agents) and an agent's own
  state machine is a plain ARN (no reference, so no cycle with the state machine that
  invokes the function).

`states:SendTask*` accept no resource-level scoping (IAM allows only "*"); the task token
is the capability, and it is only ever read from the runs' table.
"""

from __future__ import annotations

from typing import Any

from infra.naming import NAME_PREFIX, agent_physical_name
from infra.sam.data import BUCKET, IDEMPOTENCY_TABLE, SWEEP_INDEX, TABLE
from infra.sam.intrinsics import arn, get_arn, sub
from runtime.naming import agent_tag
from runtime.spec import AgentfnSpec
from runtime.tools.toolset import storage_prefix

STORAGE_TOOLS = ("builtin:storage_read", "builtin:storage_write")
THIS_STACKS_FUNCTIONS = arn("lambda", f"function:{NAME_PREFIX}*")
THIS_STACKS_STATE_MACHINES = arn("states", f"stateMachine:{NAME_PREFIX}*")
THIS_STACKS_EXECUTIONS = arn("states", f"execution:{NAME_PREFIX}*:*")


def _allow(sid: str, action: str | list[str], resource: Any, **condition: Any) -> dict[str, Any]:
    statement = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    if condition:
        statement["Condition"] = condition
    return statement


def _objects(*prefixes: str) -> list[dict[str, Any]]:
    return [sub(f"${{{BUCKET}.Arn}}/{prefix}*") for prefix in prefixes]


def _leading_keys(*patterns: str) -> dict[str, Any]:
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(patterns)}}


def event_bus_arn(spec: AgentfnSpec) -> Any:
    bus = spec.deployment.event_bus
    return bus if bus.startswith("arn:") else arn("events", f"event-bus/{bus}")


def _put_events(spec: AgentfnSpec) -> dict[str, Any]:
    return _allow("PublishRunEvents", "events:PutEvents", event_bus_arn(spec))


def agent_storage_prefixes(spec: AgentfnSpec, agent: str) -> list[str]:
    """S3 prefixes an agent's tools read, write and list: its tool cache, and its storage
    prefix when it lists a storage tool."""
    prefixes = [f"tool-cache/{agent}/"]
    if any(ref in STORAGE_TOOLS for ref in spec.agents[agent].tools):
        prefixes.append(storage_prefix(spec, agent))
    return prefixes


def agent_data_statements(spec: AgentfnSpec, agent: str) -> list[dict[str, Any]]:
    """The agent's own runs, sessions and objects; its own state machine; the event bus."""
    tag = agent_tag(agent)
    listed = agent_storage_prefixes(spec, agent)
    return [
        _allow(
            "OwnRunsAndSessions",
            ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
            get_arn(TABLE),
            **_leading_keys(f"RUN#{tag}*", f"SES#{agent}#*"),
        ),
        _allow(
            "OwnObjects",
            ["s3:GetObject", "s3:PutObject"],
            _objects(f"bodies/{tag}", f"results/{tag}", *listed),
        ),
        _allow(
            "ListOwnPrefixes",
            "s3:ListBucket",
            get_arn(BUCKET),
            StringLike={"s3:prefix": [f"{prefix}*" for prefix in listed]},
        ),
        # A long run continues in a fresh execution of its own state machine.
        _allow(
            "ContinueInOwnStateMachine",
            "states:StartExecution",
            arn("states", f"stateMachine:{agent_physical_name(agent)}"),
        ),
        # The wait task resumes its own execution when a decision beat its task token.
        _allow("ResumeOwnWait", "states:SendTaskSuccess", "*"),
        _put_events(spec),
    ]


def api_statements(spec: AgentfnSpec) -> list[dict[str, Any]]:
    """The API reads any run of this stack and records decisions; it starts, stops and
    inspects this stack's agents (by name pattern) and owns the Idempotency-Key records."""
    return [
        _allow(
            "ReadRunsRecordDecisions",
            ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
            get_arn(TABLE),
        ),
        _allow(
            "IdempotencyRecords",
            ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
            get_arn(IDEMPOTENCY_TABLE),
        ),
        _allow("ReadRunObjects", "s3:GetObject", _objects("bodies/", "results/", "tool-cache/")),
        _allow("WriteRunBodies", "s3:PutObject", _objects("bodies/")),
        _allow("RunAgentsInline", "lambda:InvokeFunction", THIS_STACKS_FUNCTIONS),
        _allow("StartAgentStateMachines", "states:StartExecution", THIS_STACKS_STATE_MACHINES),
        _allow(
            "ManageAgentExecutions",
            ["states:StopExecution", "states:DescribeExecution"],
            THIS_STACKS_EXECUTIONS,
        ),
        _allow("ResumeWaitingRuns", ["states:SendTaskSuccess", "states:SendTaskFailure"], "*"),
        _put_events(spec),
    ]


def sweeper_statements(spec: AgentfnSpec) -> list[dict[str, Any]]:
    """Find stalled runs in the sparse `sweep` index, read them, and resume them (a new
    execution, a task token sent again) or fail them. Failing a run commits its head and
    its session's run marker (`SES#…`, the run's final status) in one transaction, so
    PutItem covers both partitions; GetItem needs run heads only."""
    return [
        _allow(
            "FindStalledRuns",
            "dynamodb:Query",
            sub(f"${{{TABLE}.Arn}}/index/{SWEEP_INDEX}"),
        ),
        _allow("ReadRunHeads", "dynamodb:GetItem", get_arn(TABLE), **_leading_keys("RUN#*")),
        _allow(
            "ResumeOrFailRuns",
            "dynamodb:PutItem",
            get_arn(TABLE),
            **_leading_keys("RUN#*", "SES#*"),
        ),
        _allow(
            "ReadRunMessages", "dynamodb:Query", get_arn(TABLE), **_leading_keys("RUN#*", "SES#*")
        ),
        _allow("ReadRunObjects", "s3:GetObject", _objects("bodies/", "results/")),
        _allow("InspectAgentExecutions", "states:DescribeExecution", THIS_STACKS_EXECUTIONS),
        _allow("RestartAgentStateMachines", "states:StartExecution", THIS_STACKS_STATE_MACHINES),
        _allow("ResumeWaitingRuns", "states:SendTaskSuccess", "*"),
        _put_events(spec),
    ]


def state_machine_statements(function_id: str) -> list[dict[str, Any]]:
    """Exactly its own agent's function (SAM's LambdaInvokePolicy grants `function:NAME*`,
    a prefix that also matches other agents whose name starts with this one's)."""
    return [_allow("InvokeOwnAgentFunction", "lambda:InvokeFunction", get_arn(function_id))]
