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

from infra.sam import snapstart
from infra.sam.data import BUCKET, IDEMPOTENCY_TABLE, SWEEP_INDEX, TABLE
from infra.sam.intrinsics import arn, get_arn, sub
from infra.sam.naming import NAME_PREFIX, agent_function_id, agent_physical_name
from runtime.naming import agent_tag
from runtime.spec import AgentfnSpec
from runtime.spec.graph import handoff_paths
from runtime.tools.toolset import storage_prefix

STORAGE_TOOLS = ("builtin:storage_read", "builtin:storage_write")
#: Partition-key prefixes the API function uses in the runs' table (runtime.store.items): run
#: heads and events, sessions (markers, messages, state), workflow runs.
API_KEY_PREFIXES = ("RUN#", "SES#", "WF#")
THIS_STACKS_FUNCTIONS = arn("lambda", f"function:{NAME_PREFIX}*")
THIS_STACKS_STATE_MACHINES = arn("states", f"stateMachine:{NAME_PREFIX}*")
THIS_STACKS_EXECUTIONS = arn("states", f"execution:{NAME_PREFIX}*:*")


def allow(sid: str, action: str | list[str], resource: Any, **condition: Any) -> dict[str, Any]:
    statement = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    if condition:
        statement["Condition"] = condition
    return statement


def _objects(*prefixes: str) -> list[dict[str, Any]]:
    return [sub(f"${{{BUCKET}.Arn}}/{prefix}*") for prefix in prefixes]


def leading_keys(*patterns: str) -> dict[str, Any]:
    return {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": list(patterns)}}


def event_bus_arn(spec: AgentfnSpec) -> Any:
    bus = spec.deployment.event_bus
    return bus if bus.startswith("arn:") else arn("events", f"event-bus/{bus}")


def _put_events(spec: AgentfnSpec) -> dict[str, Any]:
    return allow("PublishRunEvents", "events:PutEvents", event_bus_arn(spec))


def agent_storage_prefixes(spec: AgentfnSpec, agent: str) -> list[str]:
    """S3 prefixes an agent's tools read, write and list: the tool caches of the sessions it
    may work in (its own, and those of the agents that can hand it a conversation), and its
    storage prefix when it lists a storage tool."""
    prefixes = [f"tool-cache/{entry}/" for entry in entry_agents(spec, agent)]
    if any(ref in STORAGE_TOOLS for ref in spec.agents[agent].tools):
        prefixes.append(storage_prefix(spec, agent))
    return prefixes


def entry_agents(spec: AgentfnSpec, agent: str) -> list[str]:
    """Agents whose runs this agent's function may advance: itself, and every agent that can
    hand a conversation to it (runtime.teams.entry_agents_of says the same at run time)."""
    return [e for e in spec.agents if agent in handoff_paths(spec, e)]


def asked_agents(spec: AgentfnSpec, agent: str) -> list[str]:
    """Sub-agents this agent asks as tools: it creates their child runs and reads them."""
    subs = spec.agents[agent].sub_agents
    return [s.agent for s in subs if s.as_ == "tool" and s.agent in spec.agents]  # not remote


def asking_entries(spec: AgentfnSpec, agent: str) -> list[str]:
    """Entry agents of the runs that may ask this agent as a tool: as a child, it reads
    its parent's head to wake it."""
    return [
        e
        for e in spec.agents
        if any(agent in asked_agents(spec, member) for member in handoff_paths(spec, e))
    ]


def team_agents(spec: AgentfnSpec, agent: str) -> list[str]:
    """The agents whose runs this agent's function advances: its own and those handed to
    it (entries), and those it asks (child runs it starts)."""
    entries = entry_agents(spec, agent)
    return entries + [c for c in asked_agents(spec, agent) if c not in entries]


def agent_data_statements(spec: AgentfnSpec, agent: str) -> list[dict[str, Any]]:
    """The runs, sessions and objects of its team's conversations (the runs it may advance:
    its own and those handed to it; the child runs it starts), its parents' heads, the state
    machines it may start (a run continuing anew, a child), the event bus."""
    owned = team_agents(spec, agent)
    tags = [agent_tag(a) for a in owned]
    listed = agent_storage_prefixes(spec, agent)
    statements = [
        allow(
            "TeamRunsAndSessions",
            ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
            get_arn(TABLE),
            **leading_keys(*(f"RUN#{t}*" for t in tags), *(f"SES#{a}#*" for a in owned)),
        ),
        allow(
            "TeamObjects",
            ["s3:GetObject", "s3:PutObject"],
            _objects(*(f"bodies/{t}" for t in tags), *(f"results/{t}" for t in tags), *listed),
        ),
        allow(
            "ListTeamPrefixes",
            "s3:ListBucket",
            get_arn(BUCKET),
            StringLike={"s3:prefix": [f"{prefix}*" for prefix in listed]},
        ),
        # A long run continues in a fresh execution; a child run starts in its agent's own.
        allow(
            "StartTeamStateMachines",
            "states:StartExecution",
            [arn("states", f"stateMachine:{agent_physical_name(a)}") for a in owned],
        ),
        # Resume a wait: its own (a decision beat the token), or a parent's (a child ended).
        allow("ResumeWaits", "states:SendTaskSuccess", "*"),
        _put_events(spec),
    ]
    parents = [e for e in asking_entries(spec, agent) if e not in owned]
    if parents:
        statements.append(
            allow(  # a run's head is its newest record (runtime.store.records): a Query
                "ReadParentRuns",
                ["dynamodb:GetItem", "dynamodb:Query"],
                get_arn(TABLE),
                **leading_keys(*(f"RUN#{agent_tag(e)}*" for e in parents)),
            )
        )
    return statements


def api_statements(spec: AgentfnSpec) -> list[dict[str, Any]]:
    """The API reads any run of this stack and records decisions; it starts, stops and
    inspects this stack's agents (by name pattern) and owns the Idempotency-Key records.
    In the runs' table it reaches only the partitions of runs, sessions and workflow runs
    (API_KEY_PREFIXES): not the live watchers' items (their own grant, infra.sam.live) nor
    any partition a later feature adds."""
    return [
        allow(
            "ReadRunsRecordDecisions",
            ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
            get_arn(TABLE),
            **leading_keys(*(f"{prefix}*" for prefix in API_KEY_PREFIXES)),
        ),
        allow(
            "IdempotencyRecords",
            ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"],
            get_arn(IDEMPOTENCY_TABLE),
        ),
        allow("ReadRunObjects", "s3:GetObject", _objects("bodies/", "results/", "tool-cache/")),
        allow("WriteRunBodies", "s3:PutObject", _objects("bodies/")),
        # DELETE /agents/{agent}/sessions/{id}: a session's items and objects, on demand.
        allow(
            "DeleteSessionItems",
            "dynamodb:BatchWriteItem",
            get_arn(TABLE),
            **leading_keys("RUN#*", "SES#*"),
        ),
        allow(
            "DeleteSessionObjects",
            "s3:DeleteObject",
            _objects("bodies/", "results/", "tool-cache/"),
        ),
        allow(
            "ListSessionObjects",
            "s3:ListBucket",
            get_arn(BUCKET),
            StringLike={"s3:prefix": ["bodies/*", "results/*", "tool-cache/*"]},
        ),
        allow("RunAgentsInline", "lambda:InvokeFunction", THIS_STACKS_FUNCTIONS),
        allow("StartAgentStateMachines", "states:StartExecution", THIS_STACKS_STATE_MACHINES),
        allow(
            "ManageAgentExecutions",
            ["states:StopExecution", "states:DescribeExecution"],
            THIS_STACKS_EXECUTIONS,
        ),
        allow("ResumeWaitingRuns", ["states:SendTaskSuccess", "states:SendTaskFailure"], "*"),
        _put_events(spec),
    ]


def sweeper_statements(spec: AgentfnSpec) -> list[dict[str, Any]]:
    """Find stalled runs in the sparse `sweep` index, read them, and resume them (a new
    execution, a task token sent again) or fail them. Failing a run commits its head and
    its session's run marker (`SES#…`, the run's final status) in one transaction, so
    PutItem covers both partitions; a run's head is its newest record (a Query)."""
    return [
        allow(
            "FindStalledRuns",
            "dynamodb:Query",
            sub(f"${{{TABLE}.Arn}}/index/{SWEEP_INDEX}"),
        ),
        allow("ReadRunHeads", "dynamodb:GetItem", get_arn(TABLE), **leading_keys("RUN#*")),
        allow(
            "ResumeOrFailRuns",
            "dynamodb:PutItem",
            get_arn(TABLE),
            **leading_keys("RUN#*", "SES#*"),
        ),
        allow(
            "ReadRunMessages", "dynamodb:Query", get_arn(TABLE), **leading_keys("RUN#*", "SES#*")
        ),
        allow("ReadRunObjects", "s3:GetObject", _objects("bodies/", "results/")),
        allow("InspectAgentExecutions", "states:DescribeExecution", THIS_STACKS_EXECUTIONS),
        allow("RestartAgentStateMachines", "states:StartExecution", THIS_STACKS_STATE_MACHINES),
        allow("ResumeWaitingRuns", "states:SendTaskSuccess", "*"),
        _put_events(spec),
    ]


def state_machine_statements(spec: AgentfnSpec, agent: str) -> list[dict[str, Any]]:
    """Exactly the functions of its agent's handoff team, by ARN: a handoff moves the run to
    the next agent's function (SAM's LambdaInvokePolicy would grant `function:NAME*`, a
    prefix that also matches other agents whose name starts with this one's)."""
    functions = [
        snapstart.invoke_arn(spec, agent_function_id(member))
        for member in handoff_paths(spec, agent)
    ]
    return [allow("InvokeTeamFunctions", "lambda:InvokeFunction", functions)]
