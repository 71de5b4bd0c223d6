"""The generated SAM template: structure, scoping and determinism."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from infra.sam.naming import agent_function_id, agent_state_machine_id
from infra.sam.template import build_template, render
from runtime.naming import agent_resource_name
from runtime.routes import ROUTES
from runtime.spec import AgentfnSpec
from runtime.spec.graph import handoff_paths
from tests.infra.cfn import function_statements


def _statements(resources: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    return function_statements(resources, function_id)


def _by_sid(resources: dict[str, Any], function_id: str, sid: str) -> dict[str, Any] | None:
    return next((s for s in _statements(resources, function_id) if s.get("Sid") == sid), None)


def test_each_agent_gets_a_named_function_and_a_standard_state_machine(
    full_spec: AgentfnSpec,
) -> None:
    template = build_template(full_spec)
    resources = template["Resources"]
    for agent in full_spec.agents:
        function = resources[agent_function_id(agent)]
        assert function["Type"] == "AWS::Serverless::Function"
        assert function["Properties"]["Handler"] == "handlers.step.handler"
        assert function["Properties"]["Environment"]["Variables"]["AGENTFN_AGENT"] == agent
        name = function["Properties"]["FunctionName"]["Fn::Sub"]
        assert name[0] == f"agentfn-${{Stack8}}-{agent_resource_name(agent)}"
        machine = resources[agent_state_machine_id(agent)]
        assert machine["Type"] == "AWS::Serverless::StateMachine"
        assert machine["Properties"]["Type"] == "STANDARD"
        assert machine["Properties"]["Name"] == function["Properties"]["FunctionName"]
        (invoke,) = machine["Properties"]["Policies"][0]["Statement"]
        assert invoke["Action"] == "lambda:InvokeFunction"  # its handoff team's functions
        team = handoff_paths(full_spec, agent)
        # the alias of each (the full fixture has deployment.snapstart: no `$LATEST`)
        assert invoke["Resource"] == [{"Ref": f"{agent_function_id(a)}.Alias"} for a in team]
    agent_functions = [
        k
        for k, v in resources.items()
        if v["Type"] == "AWS::Serverless::Function"
        and v["Properties"]["Handler"] == "handlers.step.handler"
    ]
    assert len(agent_functions) == len(full_spec.agents)
    # One log group for every function (JSON logs), not one per agent.
    logs = [k for k, v in resources.items() if v["Type"] == "AWS::Logs::LogGroup"]
    assert logs == ["FunctionLogs", "ApiAccessLogs", "LiveAccessLogs", "StateMachineLogs"]
    assert template["Globals"]["Function"]["LoggingConfig"] == {
        "LogFormat": "JSON",
        "LogGroup": {"Ref": "FunctionLogs"},
        "ApplicationLogLevel": "INFO",  # deployment.log_level, as Lambda spells it
    }
    assert resources["FunctionLogs"]["Properties"]["RetentionInDays"] == 90


def test_agent_lambda_settings_are_applied(full_spec: AgentfnSpec) -> None:
    resources = build_template(full_spec)["Resources"]
    support = resources[agent_function_id("support")]["Properties"]
    assert support["MemorySize"] == 2048 and support["Timeout"] == 900
    assert support["ReservedConcurrentExecutions"] == 10
    ledger = resources[agent_function_id("ledger")]["Properties"]
    assert "MemorySize" not in ledger  # from Globals
    assert ledger["ReservedConcurrentExecutions"] == 20  # defaults.lambda


def test_state_machine_has_the_loop_shape_with_retries_catches_and_timeouts(
    full_spec: AgentfnSpec,
) -> None:
    machine = build_template(full_spec)["Resources"][agent_state_machine_id("support")][
        "Properties"
    ]
    states = machine["Definition"]["States"]
    assert machine["Definition"]["StartAt"] == "Start"
    for name in (
        "Start",
        "Advance",
        "Route",
        "WaitForApproval",
        "WaitForInput",
        "ContinueAsNew",
        "Continued",
        "MarkFailed",
        "Succeeded",
        "Failed",
        "Cancelled",
    ):
        assert name in states, name
    # The first advance runs in the agent's own function, with the run id alone (the
    # handler defaults `loops` and `function`: no Pass state spends a transition on them);
    # every later one in the function of whoever has the run.
    assert states["Start"]["Parameters"] == {
        "FunctionName": "${AgentFunctionArn}",
        "Payload": {"action": "advance", "run_id.$": "$.run_id"},
    }
    assert (
        states["Start"]["Next"] == "Route"
        and states["Start"]["Retry"] == states["Advance"]["Retry"]
    )
    assert not any(state["Type"] == "Pass" and "Parameters" in state for state in states.values())
    assert states["Route"]["Type"] == "Choice"
    assert states["Succeeded"]["Type"] == "Succeed" and states["Failed"]["Type"] == "Fail"
    advance = states["Advance"]
    assert advance["Resource"] == "arn:aws:states:::lambda:invoke"
    assert advance["Parameters"]["FunctionName.$"] == "$.function"
    assert advance["Parameters"]["Payload"] == {
        "action": "advance",
        "run_id.$": "$.run_id",
        "loops.$": "$.loops",
        "function.$": "$.function",
    }  # ids, a counter and a function name only
    retried = {e for r in advance["Retry"] for e in r["ErrorEquals"]}
    assert {
        "Lambda.ServiceException",
        "Lambda.TooManyRequestsException",
        "States.TaskFailed",
        "RunLeased",
    } <= retried
    assert advance["Catch"][0]["Next"] == "MarkFailed"
    # One wait state per kind: it waits what is left of the run's wait (any rule's timeout).
    for wait in (states["WaitForApproval"], states["WaitForInput"]):
        assert wait["TimeoutSecondsPath"] == "$.wait_seconds" and "TimeoutSeconds" not in wait
        assert wait["Resource"] == "arn:aws:states:::lambda:invoke.waitForTaskToken"
        assert wait["Parameters"]["Payload"]["task_token.$"] == "$$.Task.Token"
    assert states["WaitForApproval"]["Catch"][0] == {
        "ErrorEquals": ["States.Timeout"],
        "ResultPath": None,
        "Next": "ApprovalTimedOut",
    }
    targets = {c["Next"] for c in states["Route"]["Choices"]}
    assert {
        "ContinueAsNew",
        "Advance",
        "WaitForApproval",
        "WaitForInput",
        "WaitForChildren",
        "Succeeded",
        "Failed",
        "Cancelled",
    } == targets
    # Every Next points at an existing state.
    for state in states.values():
        for nxt in [
            state.get("Next"),
            state.get("Default"),
            *[c["Next"] for c in state.get("Choices", [])],
            *[c["Next"] for c in state.get("Catch", [])],
        ]:
            assert nxt is None or nxt in states


def test_agent_iam_is_scoped_to_what_the_agent_references(full_spec: AgentfnSpec) -> None:
    resources = build_template(full_spec)["Resources"]
    support = agent_function_id("support")
    rendered = json.dumps(_statements(resources, support))
    # support → claude (fallbacks haiku, gpt). Its sub-agent billing runs in billing's own
    # function: billing's model, Lambda tool and secrets are billing's grants, not support's.
    bedrock = _by_sid(resources, support, "InvokeReferencedBedrockModels")
    assert bedrock is not None
    arns = json.dumps(bedrock["Resource"])
    assert "inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0" in arns
    assert "foundation-model/anthropic.claude-sonnet-4-20250514-v1:0" in arns
    assert "bedrock:us-west-2::foundation-model/anthropic.claude-3-5-haiku-20241022-v1:0" in arns
    secrets = json.dumps(_by_sid(resources, support, "ReadReferencedSecrets"))
    for secret in ("prod/openai", "crm-token"):  # gpt (a fallback), lookup_account
        assert secret in secrets
    assert "anthropic-key" not in rendered  # ledger's model: ledger's own function
    assert "azure-key" not in rendered and "gemini" not in rendered
    ssm = json.dumps(_by_sid(resources, support, "ReadReferencedParameters"))
    assert "parameter/orders-token" in ssm  # the orders MCP server header
    assert _by_sid(resources, support, "InvokeLambdaTools") is None  # billing's `charge`: billing's
    lambdas = _by_sid(resources, agent_function_id("billing"), "InvokeLambdaTools")
    assert lambdas is not None
    assert lambdas["Resource"] == ["arn:aws:lambda:us-east-1:123456789012:function:charge"]

    # An agent with no Bedrock model, no Lambda tool and no secret gets none of those grants.
    own = [
        "TeamRunsAndSessions",
        "TeamObjects",
        "ListTeamPrefixes",
        "StartTeamStateMachines",
        "ResumeWaits",
        "PublishRunEvents",
        "FindWatchers",
        "PostToWatchers",
    ]
    local = agent_function_id("local-helper")
    assert [s["Sid"] for s in _statements(resources, local)] == own
    sids = [s["Sid"] for s in _statements(resources, agent_function_id("researcher"))]
    assert sids == [*own, "ReadReferencedParameters"]  # gemini key via SSM
    # No SAM policy template (DynamoDBCrudPolicy, S3CrudPolicy: whole table and bucket), and
    # no managed policy but the stack's own base policy (logs on its group, X-Ray).
    role = resources[f"{local}Role"]["Properties"]
    assert "Policies" not in resources[local]["Properties"]
    assert role["ManagedPolicyArns"] == [{"Ref": "FunctionBasePolicy"}]
    # Only SendTaskSuccess, which IAM cannot scope to a resource, has a wildcard.
    wildcard = [
        (s["Sid"], s["Action"]) for s in _statements(resources, support) if s.get("Resource") == "*"
    ]
    assert wildcard == [("ResumeWaits", "states:SendTaskSuccess")]


def test_api_function_has_every_route_and_scoped_orchestration_grants(
    full_spec: AgentfnSpec,
) -> None:
    template = build_template(full_spec)
    api = template["Resources"]["ApiFunction"]
    events = api["Properties"]["Events"]
    assert {(e["Properties"]["Method"], e["Properties"]["Path"]) for e in events.values()} == {
        (r.method.lower(), r.path) for r in ROUTES
    }
    start = _by_sid(template["Resources"], "ApiFunction", "StartAgentStateMachines")
    assert start is not None
    assert start["Resource"]["Fn::Sub"][0] == (
        "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:"
        "stateMachine:agentfn-${Stack8}-*"
    )
    assert template["Resources"]["Api"]["Properties"]["Auth"] == {"DefaultAuthorizer": "AWS_IAM"}
    assert not any(
        "bedrock" in json.dumps(s) for s in _statements(template["Resources"], "ApiFunction")
    )


def test_api_auth_none_leaves_the_api_open(full_spec: AgentfnSpec) -> None:
    data = full_spec.to_compiled()
    data["deployment"]["api_auth"] = "none"  # type: ignore[index]
    template = build_template(AgentfnSpec.model_validate(data))
    assert "Auth" not in template["Resources"]["Api"]["Properties"]


def test_table_and_bucket_are_durable_encrypted_and_private(full_spec: AgentfnSpec) -> None:
    resources = build_template(full_spec)["Resources"]
    table = resources["StateTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    bucket = resources["DataBucket"]["Properties"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert (
        bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
            "ServerSideEncryptionByDefault"
        ]["SSEAlgorithm"]
        == "AES256"
    )
    assert (
        bucket["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] == 14
    )  # deployment.retention


def test_outputs_name_the_api_table_bucket_and_state_machines(full_spec: AgentfnSpec) -> None:
    outputs = build_template(full_spec)["Outputs"]
    assert {"ApiUrl", "StateTableName", "DataBucketName"} <= set(outputs)
    assert outputs["ApiUrl"]["Value"]["Fn::Sub"].endswith("/prod")
    assert sum(1 for k in outputs if k.endswith("StateMachineArn")) == len(full_spec.agents)


def test_no_secret_value_or_plaintext_reference_reaches_the_template(
    full_spec: AgentfnSpec,
) -> None:
    text = render(build_template(full_spec))
    assert "${secret:" not in text
    assert "Bearer" not in text  # headers stay in the compiled spec, resolved at run time


def test_rendering_is_deterministic_and_plain_yaml(full_spec: AgentfnSpec) -> None:
    first = render(build_template(full_spec))
    second = render(build_template(AgentfnSpec.model_validate(full_spec.to_compiled())))
    assert first == second
    assert "&id" not in first and "*id" not in first  # no YAML aliases
    assert yaml.safe_load(first)["Transform"] == "AWS::Serverless-2016-10-31"


def test_runtime_override_and_default(full_spec: AgentfnSpec) -> None:
    assert build_template(full_spec)["Globals"]["Function"]["Runtime"] == "python3.13"
    assert (
        build_template(full_spec, runtime="python3.12")["Globals"]["Function"]["Runtime"]
        == "python3.12"
    )
    # python3.11 has no SnapStart, which the full fixture asks for: refused, not dropped
    with pytest.raises(ValueError, match=r"snapstart needs runtime python3\.12 or later"):
        build_template(full_spec, runtime="python3.11")
    off = full_spec.model_copy(
        update={"deployment": full_spec.deployment.model_copy(update={"snapstart": False})}
    )
    assert build_template(off, runtime="python3.11")["Globals"]["Function"]["Runtime"] == (
        "python3.11"
    )
