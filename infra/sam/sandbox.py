"""The sandbox function of `code_execute`, in the template only when an agent uses the tool:
a role with no policy at all (it cannot even write logs), in the VPC the spec names, whose
subnets must have no route out — so the code it runs can reach nothing. With
`code_execute.backend: agentcore` there is no sandbox function: the agent is granted the
AgentCore Code Interpreter's session calls on that interpreter alone."""

from __future__ import annotations

from typing import Any

from infra.sam.intrinsics import get_arn, sub
from infra.sam.naming import NAME_PREFIX
from runtime.spec import AgentfnSpec

SANDBOX = "SandboxFunction"
SANDBOX_ROLE = "SandboxRole"
SANDBOX_NAME = f"{NAME_PREFIX}code-sandbox"
TOOL = "builtin:code_execute"


def users(spec: AgentfnSpec) -> list[str]:
    return [name for name, agent in spec.agents.items() if TOOL in agent.tools]


def resources(spec: AgentfnSpec) -> dict[str, Any]:
    if not users(spec) or spec.code_execute.backend == "agentcore":
        return {}
    settings = spec.code_execute
    if not settings.subnet_ids or not settings.security_group_ids:
        raise ValueError(
            "code_execute needs code_execute.subnet_ids and code_execute.security_group_ids: "
            "private subnets with no route out and a security group with no outbound rule, "
            "so the code it runs has no network (agentfn run and dev need neither)"
        )
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "lambda.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            },
            # Creating network interfaces is Lambda's, under its service-linked role; the
            # function's own role grants nothing.
        },
    }
    function = {
        "Type": "AWS::Serverless::Function",
        "Metadata": {"BuildMethod": "makefile"},
        "Properties": {
            "FunctionName": sub(SANDBOX_NAME),
            "Description": "agentfn code_execute sandbox: no permissions, no network",
            "Handler": "handlers.sandbox.handler",
            "Role": get_arn(SANDBOX_ROLE),
            "MemorySize": max(256, settings.memory_mb + 128),
            "Timeout": int(settings.timeout) + 10,
            "ReservedConcurrentExecutions": 10,
            "VpcConfig": {
                "SubnetIds": list(settings.subnet_ids),
                "SecurityGroupIds": list(settings.security_group_ids),
            },
        },
    }
    return {SANDBOX_ROLE: role, SANDBOX: function}


def agent_environment(spec: AgentfnSpec, agent: str) -> dict[str, Any]:
    """How the agent's function reaches the sandbox: the function's name, or the AgentCore
    interpreter's id (runtime.tools.sandbox.tool reads these)."""
    if TOOL not in spec.agents[agent].tools:
        return {}
    if spec.code_execute.backend == "agentcore":
        return {"AGENTFN_CODE_INTERPRETER": spec.code_execute.code_interpreter_id}
    return {"AGENTFN_SANDBOX_FUNCTION": sub(SANDBOX_NAME)}


def _interpreter_arns(identifier: str) -> list[Any]:
    """The AWS-managed interpreter is owned by `aws`; one of yours is in this account (its
    ARN is spelled `code-interpreter` or `code-interpreter-custom`)."""
    base = "arn:${AWS::Partition}:bedrock-agentcore:${AWS::Region}"
    if identifier.startswith("aws."):
        return [{"Fn::Sub": f"{base}:aws:code-interpreter/{identifier}"}]
    return [
        {"Fn::Sub": f"{base}:${{AWS::AccountId}}:{kind}/{identifier}"}
        for kind in ("code-interpreter", "code-interpreter-custom")
    ]


def agent_grant(spec: AgentfnSpec, agent: str) -> list[dict[str, Any]]:
    if TOOL not in spec.agents[agent].tools:
        return []
    if spec.code_execute.backend == "agentcore":
        return [
            {
                "Sid": "RunCodeInAgentCore",
                "Effect": "Allow",
                "Action": [
                    "bedrock-agentcore:StartCodeInterpreterSession",
                    "bedrock-agentcore:InvokeCodeInterpreter",
                    "bedrock-agentcore:StopCodeInterpreterSession",
                ],
                "Resource": _interpreter_arns(spec.code_execute.code_interpreter_id),
            }
        ]
    return [
        {
            "Sid": "RunCodeInTheSandbox",
            "Effect": "Allow",
            "Action": "lambda:InvokeFunction",
            "Resource": get_arn(SANDBOX),
        }
    ]
