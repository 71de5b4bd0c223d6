"""A 100-agent spec builds a template that AWS accepts: every hard limit that grows with the
number of agents, checked on what CloudFormation would deploy (after the SAM transform),
with intrinsics resolved pessimistically (the longest partition, region and stack name).

Limits (AWS documentation): a Lambda function's environment ≤ 4 KB (names and values);
a role's inline policies together ≤ 10,240 characters, whitespace excluded; a trust policy
≤ 2,048; ≤ 10 managed policies per role; a template body ≤ 1 MB; ≤ 500 resources;
≤ 200 outputs; function names ≤ 64 and state machine names ≤ 80 characters.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.sam.template import build_template, render
from runtime.spec import AgentfnSpec
from tests.helpers import load_spec, tool_path
from tests.infra.cfn import pessimistic, sam_transform

AGENTS = 100
LONG = 64  # the longest agent name the spec allows


def _name(i: int) -> str:
    """Every other agent has a name of the maximum length."""
    base = f"agent-{i:03d}-"
    return (base + "x" * LONG)[:LONG] if i % 2 else f"{base}support"


def hundred_agents() -> dict[str, Any]:
    names = [_name(i) for i in range(AGENTS)]
    agents: dict[str, Any] = {}
    for i, name in enumerate(names):
        agents[name] = {
            "description": f"Agent number {i} of a large deployment, with a long description.",
            "model": ["claude", "gpt"][i % 2],
            "tools": ["charge", "builtin:storage_read", "builtin:storage_write"],
            # A chain of sub-agents four deep: each closure has several models and secrets.
            "sub_agents": [names[i + 1]] if i % 4 != 3 and i + 1 < AGENTS else [],
            "approval": [{"tools": ["charge"], "timeout": "30m"}],
        }
    return {
        "version": 1,
        "defaults": {"model": "claude"},
        "secrets": {f"key-{i}": {"name": f"prod/agentfn/provider-key-{i}"} for i in range(3)},
        "models": {
            "claude": {
                "provider": "bedrock",
                "model_id": "us.anthropic.claude-sonnet-4-20250514-v1:0",
                "fallbacks": ["haiku"],
            },
            "haiku": {
                "provider": "bedrock",
                "model_id": "anthropic.claude-3-5-haiku-20241022-v1:0",
                "region": "us-west-2",
            },
            "gpt": {"provider": "openai", "model_id": "gpt-4.1", "api_key": "${secret:key-0}"},
        },
        "tools": {
            "charge": {
                "type": "lambda",
                "function_arn": "arn:aws:lambda:us-east-1:123456789012:function:charge-a-card",
                "description": "Charge a card.",
                "effect": "idempotent",
                "input_schema": {"type": "object", "properties": {"amount": {"type": "number"}}},
            }
        },
        "agents": agents,
    }


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> AgentfnSpec:
    path = tmp_path_factory.mktemp("hundred") / "agents.yaml"
    path.write_text(yaml.safe_dump(hundred_agents(), sort_keys=False), encoding="utf-8")
    return load_spec(path)


@pytest.fixture(scope="module")
def template(spec: AgentfnSpec) -> dict[str, Any]:
    return build_template(spec)


@pytest.fixture(scope="module")
def deployed(template: dict[str, Any]) -> dict[str, Any]:
    return sam_transform(template)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, Any]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _env_bytes(variables: dict[str, Any]) -> int:
    resolve = pessimistic()
    return sum(len(k.encode()) + len(str(resolve(v)).encode()) for k, v in variables.items())


def _compact(document: Any) -> int:
    return len(json.dumps(pessimistic()(document), separators=(",", ":"), ensure_ascii=False))


def test_every_function_environment_fits_in_4_kb(deployed: dict[str, Any]) -> None:
    sizes = {
        name: _env_bytes(function["Properties"].get("Environment", {}).get("Variables", {}))
        for name, function in _of_type(deployed, "AWS::Lambda::Function").items()
    }
    assert max(sizes.values()) <= 4096, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
    assert (
        len(sizes) == AGENTS + 3
    )  # the agents, the API, the sweeper, the live (WebSocket) function


def test_every_role_policy_fits_iam_limits(deployed: dict[str, Any]) -> None:
    roles = _of_type(deployed, "AWS::IAM::Role")
    inline = {
        name: sum(_compact(p["PolicyDocument"]) for p in role["Properties"].get("Policies", []))
        for name, role in roles.items()
    }
    assert max(inline.values()) <= 10_240, sorted(inline.items(), key=lambda kv: -kv[1])[:3]
    assert len(roles) == 2 * AGENTS + 3
    for name, role in roles.items():
        assert _compact(role["Properties"]["AssumeRolePolicyDocument"]) <= 2048, name
        assert len(role["Properties"].get("ManagedPolicyArns", [])) <= 10, name


def test_resources_after_the_sam_transform_stay_under_500(deployed: dict[str, Any]) -> None:
    count = len(deployed["Resources"])
    assert count <= 500, count
    # What grows per agent: a function and a state machine, and SAM's role for each.
    assert len(_of_type(deployed, "AWS::Lambda::Function")) == AGENTS + 3
    assert len(_of_type(deployed, "AWS::StepFunctions::StateMachine")) == AGENTS
    # Shared, not per agent: functions, state machines, REST and WebSocket access logs.
    assert len(_of_type(deployed, "AWS::Logs::LogGroup")) <= 4
    # The native-metric alarms read up to 10 metrics each: 3 per agent, so 0.3 alarm.
    alarms = _of_type(deployed, "AWS::CloudWatch::Alarm")
    assert len(alarms) <= 0.3 * AGENTS + 12, len(alarms)


def test_template_body_and_outputs_are_within_cloudformation_limits(
    template: dict[str, Any], deployed: dict[str, Any]
) -> None:
    assert len(render(template).encode()) <= 1_000_000
    assert len(json.dumps(deployed, separators=(",", ":")).encode()) <= 1_000_000
    assert len(template["Outputs"]) <= 200
    assert len(template.get("Parameters", {})) <= 200


def test_physical_names_fit_lambda_and_step_functions(deployed: dict[str, Any]) -> None:
    resolve = pessimistic()
    for function in _of_type(deployed, "AWS::Lambda::Function").values():
        name = function["Properties"].get("FunctionName")
        assert name is None or len(resolve(name)) <= 64, resolve(name)
    for machine in _of_type(deployed, "AWS::StepFunctions::StateMachine").values():
        name = machine["Properties"].get("StateMachineName")
        assert name is None or len(resolve(name)) <= 80, resolve(name)


@pytest.mark.slow  # cfn-lint over 900 KB of template: half a minute
def test_the_hundred_agent_template_is_cfn_lint_clean(
    template: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(render(template), encoding="utf-8")
    result = subprocess.run(
        [tool_path("cfn-lint"), "--", str(path)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_large_templates_keep_state_machine_definitions_in_files(
    spec: AgentfnSpec, template: dict[str, Any], full_spec: AgentfnSpec, tmp_path: Path
) -> None:
    """CloudFormation's 1 MB body cannot hold 100 definitions of about 7 KB: they go to
    files that `sam deploy` uploads; a small template keeps them inline, for review."""
    from infra.sam import asl
    from infra.sam.naming import agent_state_machine_id
    from infra.sam.package import stage_definitions
    from infra.sam.template import definition_files

    files = definition_files(spec)
    assert len(files) == AGENTS
    for agent in spec.agents:
        props = template["Resources"][agent_state_machine_id(agent)]["Properties"]
        assert "Definition" not in props
        assert files[props["DefinitionUri"]] == asl.definition(spec, agent)
    stage_definitions(spec, tmp_path)
    for path, definition in files.items():
        assert json.loads((tmp_path / path).read_text(encoding="utf-8")) == definition

    assert definition_files(full_spec) == {}
    small = build_template(full_spec)["Resources"]
    for agent in full_spec.agents:
        assert "Definition" in small[agent_state_machine_id(agent)]["Properties"]
    stage_definitions(full_spec, tmp_path)  # and stale files go
    assert not (tmp_path / ".agentfn" / "statemachines").exists()
