"""Each function's role, as CloudFormation would deploy it (after the SAM transform): logs only
in the function log group, X-Ray only with tracing on, no AWS managed policy; concurrency
reserved for the front door; the WebSocket stage's access logs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.sam import live
from infra.sam.template import build_template
from runtime.spec import AgentfnSpec
from tests.infra.cfn import allowed, concrete, sam_transform

LOGS = "arn:aws:logs:us-east-1:123456789012:log-group:"
FUNCTION_GROUP = "/agentfn/agentfn-demo/functions"


def _with(spec: AgentfnSpec, **deployment: Any) -> AgentfnSpec:
    data = spec.to_compiled()
    data["deployment"].update(deployment)  # type: ignore[attr-defined]
    return AgentfnSpec.model_validate(data)


def _function_roles(deployed: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every Lambda function's role → all its statements (inline and attached policies of
    this template), resolved with concrete names."""
    resources = deployed["Resources"]
    resolve = concrete(deployed)
    found: dict[str, list[dict[str, Any]]] = {}
    for function in resources.values():
        if function["Type"] != "AWS::Lambda::Function":
            continue
        role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
        role = resources[role_id]["Properties"]
        documents = [p["PolicyDocument"] for p in role.get("Policies", [])]
        for arn in role.get("ManagedPolicyArns", []):
            assert set(arn) == {"Ref"}, arn  # only this template's own managed policies
            documents.append(resources[arn["Ref"]]["Properties"]["PolicyDocument"])
        found[role_id] = [s for d in documents for s in resolve(d)["Statement"]]
    return found


@pytest.mark.parametrize("tracing", [True, False])
def test_functions_log_only_to_their_group_and_trace_only_when_tracing(
    full_spec: AgentfnSpec, tracing: bool
) -> None:
    deployed = sam_transform(build_template(_with(full_spec, tracing=tracing)))
    text = json.dumps(deployed)
    assert "AWSLambdaBasicExecutionRole" not in text
    if not tracing:
        assert "AWSXrayWriteOnlyAccess" not in text and "xray:PutTraceSegments" not in text
    roles = _function_roles(deployed)
    assert len(roles) >= 10
    stream = f"{LOGS}{FUNCTION_GROUP}:log-stream:2026/01/01/agentfn-0123abcd-support[$LATEST]ab12"
    for role_id, statements in roles.items():
        if role_id == "SandboxRole":  # code_execute's: granted nothing at all
            assert statements == []
            continue
        assert allowed(statements, "logs:PutLogEvents", stream), role_id
        assert allowed(statements, "logs:CreateLogStream", f"{LOGS}{FUNCTION_GROUP}"), role_id
        for other in (
            "/aws/lambda/someone-else",
            "/agentfn/agentfn-demo/api-access",
            "/aws/vendedlogs/states/agentfn-agentfn-demo",
            "/agentfn/another-stack/functions",
        ):
            for action in ("logs:PutLogEvents", "logs:CreateLogStream"):
                assert not allowed(statements, action, f"{LOGS}{other}:log-stream:s"), other
                assert not allowed(statements, action, f"{LOGS}{other}"), other
        assert not allowed(statements, "logs:CreateLogGroup", f"{LOGS}{FUNCTION_GROUP}")
        assert not allowed(statements, "logs:GetLogEvents", stream)
        assert allowed(statements, "xray:PutTraceSegments", "*") == tracing, role_id
        assert allowed(statements, "xray:PutTelemetryRecords", "*") == tracing, role_id


def test_the_front_door_has_reserved_concurrency_by_default(full_spec: AgentfnSpec) -> None:
    resources = build_template(full_spec)["Resources"]
    reserved = {
        name: resources[name]["Properties"].get("ReservedConcurrentExecutions")
        for name in ("ApiFunction", live.LIVE_FUNCTION, "SweeperFunction")
    }
    assert reserved == {"ApiFunction": 50, live.LIVE_FUNCTION: 10, "SweeperFunction": 2}
    tuned = _with(full_spec, reserved_concurrency={"api": 7, "live": None, "sweeper": 1})
    resources = build_template(tuned)["Resources"]
    assert resources["ApiFunction"]["Properties"]["ReservedConcurrentExecutions"] == 7
    assert "ReservedConcurrentExecutions" not in resources[live.LIVE_FUNCTION]["Properties"]
    assert resources["SweeperFunction"]["Properties"]["ReservedConcurrentExecutions"] == 1
    for bad in ({"api": 0}, {"sweeper": -1}, {"api": "many"}, {"apis": 5}):
        with pytest.raises(ValueError, match="reserved_concurrency"):
            _with(full_spec, reserved_concurrency=bad)


def test_the_websocket_stage_writes_access_logs_to_a_retained_group(
    full_spec: AgentfnSpec,
) -> None:
    deployed = sam_transform(build_template(full_spec))
    resolve = concrete(deployed)
    resources = deployed["Resources"]
    group = resources[live.LIVE_ACCESS_LOGS]
    assert group["Properties"]["RetentionInDays"] == full_spec.deployment.log_retention_days
    settings = resolve(resources["LiveStage"]["Properties"]["AccessLogSettings"])
    assert settings["DestinationArn"] == f"{LOGS}/agentfn/agentfn-demo/live-access"
    fields = json.loads(settings["Format"])
    assert {"requestId", "connectionId", "eventType", "routeKey", "status", "userArn"} <= set(
        fields
    )
    assert fields["connectionId"] == "$context.connectionId"
    quiet = build_template(_with(full_spec, access_logs=False))["Resources"]
    assert live.LIVE_ACCESS_LOGS not in quiet
    assert "AccessLogSettings" not in quiet["LiveStage"]["Properties"]
