"""The REST API's stage (one stage, throttled, access-logged), the README's per-agent IAM
example, and IAM resources that are exactly what the spec names (secrets by ARN)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from infra.sam.template import build_template
from runtime.routes import ROUTES
from runtime.spec import AgentfnSpec
from tests.helpers import ROOT
from tests.infra.cfn import sam_transform

ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "caller": "$context.identity.caller",
    "user": "$context.identity.user",
    "userArn": "$context.identity.userArn",
    "principalId": "$context.authorizer.principalId",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "path": "$context.path",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
}


def _with(spec: AgentfnSpec, **deployment: Any) -> AgentfnSpec:
    data = spec.to_compiled()
    data["deployment"].update(deployment)  # type: ignore[attr-defined]
    return AgentfnSpec.model_validate(data)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


@pytest.fixture(scope="module")
def deployed(full_spec: AgentfnSpec) -> dict[str, Any]:
    return sam_transform(build_template(full_spec))


def test_sam_creates_only_the_configured_stage(deployed: dict[str, Any]) -> None:
    stages = _of_type(deployed, "AWS::ApiGateway::Stage")
    assert [s["Properties"]["StageName"] for s in stages.values()] == ["prod"]
    for deployment in _of_type(deployed, "AWS::ApiGateway::Deployment").values():
        assert "StageName" not in deployment["Properties"]  # SAM's extra stage `Stage`


def test_stage_writes_json_access_logs_to_a_log_group_with_retention(
    full_spec: AgentfnSpec, deployed: dict[str, Any]
) -> None:
    resources = build_template(full_spec)["Resources"]
    setting = resources["Api"]["Properties"]["AccessLogSetting"]
    assert "${ApiAccessLogs}" in setting["DestinationArn"]["Fn::Sub"]
    logged = json.loads(setting["Format"])
    assert ACCESS_LOG_FIELDS.items() <= logged.items()
    logs = resources["ApiAccessLogs"]
    assert logs["Type"] == "AWS::Logs::LogGroup"
    assert logs["Properties"]["RetentionInDays"] == 90  # deployment.log_retention_days
    (stage,) = _of_type(deployed, "AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["AccessLogSetting"] == setting
    # The account-wide CloudWatch role is a one-time setup (README), never per stack.
    assert not _of_type(deployed, "AWS::ApiGateway::Account")


def test_access_logs_can_be_turned_off(full_spec: AgentfnSpec) -> None:
    resources = build_template(_with(full_spec, access_logs=False))["Resources"]
    assert "AccessLogSetting" not in resources["Api"]["Properties"]
    assert "ApiAccessLogs" not in resources


def test_stage_throttling_has_defaults_and_follows_the_spec(full_spec: AgentfnSpec) -> None:
    (default,) = build_template(full_spec)["Resources"]["Api"]["Properties"]["MethodSettings"]
    assert default == {
        "ResourcePath": "/*",
        "HttpMethod": "*",
        "ThrottlingRateLimit": 50.0,
        "ThrottlingBurstLimit": 100,
    }
    spec = _with(full_spec, api_throttle={"rate_limit": 5, "burst_limit": 10})
    (custom,) = build_template(spec)["Resources"]["Api"]["Properties"]["MethodSettings"]
    assert custom["ThrottlingRateLimit"] == 5 and custom["ThrottlingBurstLimit"] == 10


def _secret_spec(secrets: dict[str, Any]) -> AgentfnSpec:
    return AgentfnSpec.model_validate(
        {
            "version": 1,
            "secrets": secrets,
            "models": {
                f"m-{name}": {
                    "provider": "openai",
                    "model_id": "gpt-4.1",
                    "api_key": f"${{secret:{name}}}",
                }
                for name in secrets
            },
            # One agent per model, so every secret is referenced.
            "agents": {
                f"a-{name}": {"description": "one secret", "model": f"m-{name}"} for name in secrets
            },
        }
    )


def _secret_resources(spec: AgentfnSpec) -> dict[str, Any]:
    from infra.sam.iam import agent_statements

    found: dict[str, list[Any]] = {}
    for agent in spec.agents:
        for statement in agent_statements(spec, agent):
            found.setdefault(statement["Sid"], []).extend(statement["Resource"])
    return found


def test_secrets_declared_by_arn_are_granted_exactly_as_given(full_spec: AgentfnSpec) -> None:
    secret_arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:prod/x-AbCdEf"
    parameter_arn = "arn:aws:ssm:eu-west-1:111122223333:parameter/shared/token"
    grants = _secret_resources(
        _secret_spec(
            {
                "x": {"name": secret_arn},
                "p": {"source": "ssm", "name": parameter_arn},
                "n": {"name": "prod/n"},
                "q": {"source": "ssm", "name": "/agentfn/q"},
            }
        )
    )
    assert secret_arn in grants["ReadReferencedSecrets"]
    assert parameter_arn in grants["ReadReferencedParameters"]
    assert {
        "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:"
        "secret:prod/n-??????"
    } in grants["ReadReferencedSecrets"]
    assert {
        "Fn::Sub": "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter/agentfn/q"
    } in grants["ReadReferencedParameters"]
    rendered = json.dumps(grants)
    assert (
        "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:arn:"
        not in rendered
    )
    assert "parameter/arn:" not in rendered


def test_readme_gives_a_per_agent_approval_policy_that_matches_the_routes() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Who can do what", 1)[1].split("\n## ", 1)[0]
    policy = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))  # type: ignore[union-attr]
    routes = {(r.method, r.path) for r in ROUTES}
    resources = [r for s in policy["Statement"] for r in s["Resource"]]
    assert any(r.endswith("/POST/agents/billing/runs/*/approval") for r in resources)
    for resource in resources:
        assert resource.startswith("arn:aws:execute-api:"), resource
        method, _, path = resource.split("/", 2)[2].partition("/")
        pattern = re.sub(r"\{[^}]+\}", "*", "/" + path.replace("billing", "{agent}", 1))
        assert any(m == method and re.sub(r"\{[^}]+\}", "*", p) == pattern for m, p in routes), (
            resource
        )
        assert "/agents/" in resource  # agent-scoped routes only; /runs/… are for operators
    assert all(s["Action"] == "execute-api:Invoke" for s in policy["Statement"])
