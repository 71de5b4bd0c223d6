"""Per agent: its Lambda function and its Standard state machine; and the sweeper.

Both of an agent's resources get the fixed physical name `agentfn-{stack8}-{resource name}`
(infra.sam.naming): the runtime finds them from two prefixes in its environment, and IAM grants
them by name, so nothing in the template grows with the number of agents except the
agents' own resources.
"""

from __future__ import annotations

from typing import Any

from infra.sam import asl, grants, iam, live, sandbox, snapstart
from infra.sam.intrinsics import sub
from infra.sam.naming import agent_function_id, agent_physical_name
from runtime.naming import agent_tag
from runtime.spec import AgentfnSpec

SWEEPER = "SweeperFunction"


def agent_function(spec: AgentfnSpec, agent: str) -> dict[str, Any]:
    config = spec.agents[agent]
    props: dict[str, Any] = {
        "FunctionName": sub(agent_physical_name(agent)),
        "Description": f"agentfn agent {agent!r}: {config.description}"[:256],
        "Handler": "handlers.step.handler",
        "Environment": {"Variables": {"AGENTFN_AGENT": agent}},
    }
    if config.lambda_.memory is not None:
        props["MemorySize"] = config.lambda_.memory
    if config.lambda_.timeout is not None:
        props["Timeout"] = int(config.lambda_.timeout)
    concurrency = config.lambda_.reserved_concurrency
    if concurrency is None:
        concurrency = spec.defaults.lambda_.reserved_concurrency
    if concurrency is not None:
        props["ReservedConcurrentExecutions"] = concurrency
    props["Environment"]["Variables"].update(sandbox.agent_environment(spec, agent))
    props["Environment"]["Variables"].update(live.agent_environment())
    tags = [agent_tag(a) for a in grants.team_agents(spec, agent)]
    statements = [
        *grants.agent_data_statements(spec, agent),
        *live.agent_statements(tags),
        *iam.agent_statements(spec, agent),
        *sandbox.agent_grant(spec, agent),
    ]
    props["Policies"] = [{"Statement": statements}]
    return {"Type": "AWS::Serverless::Function", "Properties": props}


def state_machine(spec: AgentfnSpec, agent: str, definition_uri: str | None) -> dict[str, Any]:
    """The agent's state machine; its definition inline, or in the file `definition_uri`
    (relative to the template; `sam deploy` uploads it to S3) when the template is large."""
    function_id = agent_function_id(agent)
    props: dict[str, Any] = {
        "Name": sub(agent_physical_name(agent)),
        "Type": "STANDARD",
        **(
            {"DefinitionUri": definition_uri}
            if definition_uri
            else {"Definition": asl.definition(spec, agent)}
        ),
        "DefinitionSubstitutions": {"AgentFunctionArn": snapstart.invoke_arn(spec, function_id)},
        "Policies": [{"Statement": grants.state_machine_statements(spec, agent)}],
    }
    if spec.deployment.tracing:
        props["Tracing"] = {"Enabled": True}
    return {"Type": "AWS::Serverless::StateMachine", "Properties": props}


def schedule_expression(seconds: float) -> str:
    minutes = int(seconds // 60)
    return "rate(1 minute)" if minutes == 1 else f"rate({minutes} minutes)"


def sweeper_function(spec: AgentfnSpec) -> dict[str, Any]:
    """Resumes runs that stalled between steps (a lost invocation, an execution that ended
    without finishing its run): it reads the sparse `sweep` index on a schedule. One
    function for the stack, whatever the number of agents; its reserved concurrency
    (`deployment.reserved_concurrency.sweeper`) keeps a sweep possible when agents fill the
    account's pool."""
    function: dict[str, Any] = {
        "Type": "AWS::Serverless::Function",
        "Properties": {
            "Description": "agentfn sweeper: resume stalled runs",
            "Handler": "handlers.sweeper.handler",
            "MemorySize": 512,
            "Timeout": 300,
            "Environment": {"Variables": live.agent_environment()},  # runs it ends are watched
            "Policies": [
                {"Statement": [*grants.sweeper_statements(spec), *live.agent_statements([""])]}
            ],
            "Events": {
                "Sweep": {
                    "Type": "Schedule",
                    "Properties": {
                        "Schedule": schedule_expression(spec.deployment.sweep_interval),
                        "Description": "agentfn: resume stalled runs",
                    },
                }
            },
        },
    }
    reserved = spec.deployment.reserved_concurrency.sweeper
    if reserved is not None:
        function["Properties"]["ReservedConcurrentExecutions"] = reserved
    return function
