"""`agentfn build` refuses a stack CloudFormation would refuse, counting what the SAM
transform makes (infra/sam/limits.py); every count here is checked against the real
transform (the SAM CLI's translator, offline: tests/infra/cfn.py), never a constant."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from infra.sam import limits
from infra.sam.template import render
from tests.helpers import DEMO_SPEC, FULL_SPEC, load_spec, run_agentfn
from tests.infra.cfn import sam_transform
from tests.infra.stack_specs import template_of, write_spec


def _real(template: dict[str, Any]) -> tuple[Counter[str], dict[str, Any]]:
    processed = sam_transform(template)
    return Counter(r["Type"] for r in processed["Resources"].values()), processed


def _count(agents: int, tmp_path: Path) -> int:
    return limits.expand(template_of(write_spec(agents, tmp_path / str(agents)))).total()


@pytest.mark.parametrize("size", ["demo", "full", 1, 10, 50, 130])
def test_the_count_is_the_real_transforms_type_by_type(size: str | int, tmp_path: Path) -> None:
    """Small stacks keep their state machine definitions inline (which SAM rewrites, at
    2.5 times the size), large ones in files: both are measured."""
    if isinstance(size, int):
        template = template_of(write_spec(size, tmp_path))
    else:
        from infra.sam.template import build_template

        template = build_template(load_spec(DEMO_SPEC if size == "demo" else FULL_SPEC))
    counted = limits.figures(template, render(template))
    real, processed = _real(template)
    assert counted.resources == real
    assert counted.outputs == len(processed["Outputs"])
    assert counted.roles == real["AWS::IAM::Role"]
    size_of_processed = len(json.dumps(processed, separators=(",", ":")).encode())
    # The estimate is an upper bound, and a close one.
    assert size_of_processed <= counted.processed_bytes <= 1.2 * size_of_processed


def test_workflow_definitions_go_to_files_too_when_the_template_is_large(tmp_path: Path) -> None:
    """Forty workflows inline would take about a megabyte once SAM has rewritten them: past
    the inline limit they are files `sam deploy` uploads, like the agents'."""
    from infra.sam.naming import workflow_state_machine_id
    from infra.sam.package import stage_definitions
    from infra.sam.template import definition_files

    path = write_spec(10, tmp_path, workflows=40)
    template = template_of(path)
    spec = load_spec(path)
    files = definition_files(spec)
    assert len(files) == 10 + 40
    for workflow in spec.workflows:
        props = template["Resources"][workflow_state_machine_id(workflow)]["Properties"]
        assert "Definition" not in props and props["DefinitionUri"] in files
    stage_definitions(spec, tmp_path)
    assert all((tmp_path / p).is_file() for p in files)
    counted = limits.figures(template, render(template))
    real, processed = _real(template)
    assert counted.resources == real
    size_of_processed = len(json.dumps(processed, separators=(",", ":")).encode())
    assert size_of_processed <= counted.processed_bytes <= 1.2 * size_of_processed
    assert size_of_processed < limits.TEMPLATE_BYTES / 2  # inline: about 1.7 MB


def test_every_modelled_construct_expands_as_the_transform_does() -> None:
    """The constructs agentfn does not emit today but `expand` models, each checked."""
    code = {"Bucket": "b", "Key": "k"}
    schedule = {"Type": "Schedule", "Properties": {"Schedule": "rate(5 minutes)"}}
    template: dict[str, Any] = {
        "Transform": "AWS::Serverless-2016-10-31",
        "Globals": {"Function": {"Runtime": "python3.13", "Handler": "h.handler"}},
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Implicit": {
                "Type": "AWS::Serverless::Function",
                "Properties": {
                    "CodeUri": code,
                    "AutoPublishAlias": "live",
                    "Events": {
                        "Get": {"Type": "Api", "Properties": {"Path": "/a", "Method": "get"}},
                        "Post": {"Type": "Api", "Properties": {"Path": "/b", "Method": "post"}},
                        "Tick": schedule,
                        "Bus": {"Type": "EventBridgeRule", "Properties": {"Pattern": {"x": ["y"]}}},
                        "Old": {"Type": "CloudWatchEvent", "Properties": {"Pattern": {"x": ["z"]}}},
                        "Jobs": {
                            "Type": "SQS",
                            "Properties": {"Queue": {"Fn::GetAtt": ["Queue", "Arn"]}},
                        },
                    },
                },
            },
            "WithRole": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"CodeUri": code, "Role": "arn:aws:iam::123456789012:role/r"},
            },
            "Machine": {
                "Type": "AWS::Serverless::StateMachine",
                "Properties": {
                    "Definition": {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}},
                    "Policies": [],
                    "AutoPublishAlias": "live",
                    "Events": {"Tick": schedule},
                },
            },
            "OwnRole": {
                "Type": "AWS::Serverless::StateMachine",
                "Properties": {
                    "Definition": {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": True}}},
                    "Role": "arn:aws:iam::123456789012:role/r",
                },
            },
            "Layer": {
                "Type": "AWS::Serverless::LayerVersion",
                "Properties": {"ContentUri": "s3://b/layer.zip"},
            },
        },
    }
    real, _ = _real(template)
    assert limits.expand(template) == real
    assert real["AWS::ApiGateway::RestApi"] == 1  # the implicit API, once for two events


@pytest.mark.parametrize(
    "props",
    [{"FunctionUrlConfig": {"AuthType": "NONE"}}, {"Events": {"T": {"Type": "SNS"}}}],
)
def test_a_construct_it_cannot_count_is_refused_not_guessed(props: dict[str, Any]) -> None:
    template = {"Resources": {"F": {"Type": "AWS::Serverless::Function", "Properties": props}}}
    with pytest.raises(limits.UnknownExpansion, match="F"):
        limits.expand(template)


def _build(path: Path) -> Any:
    return run_agentfn("build", "-f", "agents.yaml", "-o", "template.yaml", cwd=path.parent)


@pytest.mark.parametrize(
    ("agents", "limit"),
    [
        (150, "resources after the SAM transform, over CloudFormation's 500 per stack"),
        (130, "over CloudFormation's 1,000,000 (1 MB)"),  # size binds before resources
    ],
)
def test_too_many_agents_are_refused_at_build_naming_the_limit_and_the_count(
    agents: int, limit: str, tmp_path: Path
) -> None:
    path = write_spec(agents, tmp_path)
    real, _ = _real(template_of(path))
    result = _build(path)
    assert result.returncode == 1, result.stderr
    assert "cannot deploy as one stack: " in result.stderr
    assert limit in result.stderr
    assert f"({agents} agents, 0 workflows); split the agents" in result.stderr
    if "resources" in limit:
        assert f"{sum(real.values())} resources after the SAM transform" in result.stderr
    assert not (tmp_path / "template.yaml").exists()  # nothing half-written


def _fits(agents: int, tmp_path: Path) -> bool:
    template = template_of(write_spec(agents, tmp_path / str(agents)))
    return not limits.check(template, render(template), agents, 0).errors


@pytest.mark.slow  # a binary search of templates of 100 to 400 agents, two `agentfn build`s
def test_the_largest_stack_builds_and_one_agent_more_is_refused(tmp_path: Path) -> None:
    """The boundary, wherever the template's shape puts it (every limit counted: resources,
    outputs, bytes): the largest stack is at most 500 resources for the real transform and
    builds, and one agent more is refused."""
    low, high = 1, 400
    while high - low > 1:  # every figure grows with the number of agents
        middle = (low + high) // 2
        low, high = (middle, high) if _fits(middle, tmp_path) else (low, middle)
    largest = low
    assert largest >= 110  # the issue's promise (#21); README, Stack size limits
    fits, _ = _real(template_of(write_spec(largest, tmp_path / "fits")))
    assert sum(fits.values()) <= limits.RESOURCES, largest
    write_spec(largest + 1, tmp_path / "over")
    assert _build(tmp_path / "fits" / "agents.yaml").returncode == 0
    assert _build(tmp_path / "over" / "agents.yaml").returncode == 1


def test_110_agents_build_with_one_state_machine_role_and_say_so(tmp_path: Path) -> None:
    """One role per agent state machine would take the stack past 500 resources: build gives
    them one role, which may invoke this stack's agent functions only, assumed by Step
    Functions for this stack's state machines only (infra/sam/machine_role.py)."""
    from infra.sam.machine_role import SHARED_ROLE
    from infra.sam.naming import agent_state_machine_id
    from tests.infra.cfn import STACK8, allowed, role_statements

    path = write_spec(110, tmp_path)
    template = template_of(path)
    real, processed = _real(template)
    assert sum(real.values()) <= limits.RESOURCES
    for agent in load_spec(path).agents:
        props = processed["Resources"][agent_state_machine_id(agent)]["Properties"]
        assert props["RoleArn"] == {"Fn::GetAtt": [SHARED_ROLE, "Arn"]}
    statements = role_statements(processed, SHARED_ROLE)
    stack = f"arn:aws:lambda:us-east-1:123456789012:function:agentfn-{STACK8}-"
    assert allowed(statements, "lambda:InvokeFunction", stack + "agent-007")
    assert not allowed(statements, "lambda:InvokeFunction", stack.replace(STACK8, "ffff0000") + "a")
    assert not allowed(statements, "lambda:InvokeFunction", stack[: -len(STACK8) - 1] + "x")
    assert not allowed(statements, "states:StartExecution", "*")
    assert not allowed(statements, "dynamodb:GetItem", "*")
    (trust,) = processed["Resources"][SHARED_ROLE]["Properties"]["AssumeRolePolicyDocument"][
        "Statement"
    ]
    assert trust["Principal"] == {"Service": "states.amazonaws.com"}
    assert set(trust["Condition"]) == {"StringEquals", "ArnLike"}
    result = _build(path)
    assert result.returncode == 0, result.stderr
    assert "note: 110 agents: their state machines share one role" in result.stderr
    assert "IAM roles;" not in result.stderr  # 114 roles: no warning
    # Below the limit every agent keeps its own (tests/infra/test_template_isolation.py).
    small = template_of(write_spec(20, tmp_path / "small"))
    assert SHARED_ROLE not in small["Resources"]


def test_outputs_parameters_mappings_and_size_are_each_refused() -> None:
    base: dict[str, Any] = {"Resources": {"T": {"Type": "AWS::SNS::Topic"}}}
    cases = {
        "201 outputs, over CloudFormation's 200": {"Outputs": {f"O{i}": {} for i in range(201)}},
        "201 parameters, over CloudFormation's 200": {
            "Parameters": {f"P{i}": {} for i in range(201)}
        },
        "201 mappings, over CloudFormation's 200": {"Mappings": {f"M{i}": {} for i in range(201)}},
    }
    for message, extra in cases.items():
        report = limits.check({**base, **extra}, "{}", 1, 0)
        assert [e for e in report.errors if e.startswith(message)], report.errors
    big = limits.check(base, "x" * 1_000_001, 1, 0)
    assert big.errors == [
        "the template takes 1,000,001 bytes, over CloudFormation's 1,000,000 (1 MB) for a "
        "template uploaded to S3 (1 agents, 0 workflows); split the agents across several "
        "specs, one stack each (README: Deploying, Stack size limits)"
    ]
    assert limits.check(base, "{}", 1, 0).errors == []


def test_100_agents_build_report_their_real_figures_and_warn_of_the_accounts_roles(
    tmp_path: Path,
) -> None:
    """100 agents fit (the native alarms took the room of about ten more: README, Stack size
    limits); their roles pass a fifth of the account's default 1,000 (each agent has two),
    which is a warning, and a refusal with --strict."""
    path = write_spec(100, tmp_path)
    real, processed = _real(template_of(path))
    result = _build(path)
    assert result.returncode == 0, result.stderr
    roles = real["AWS::IAM::Role"]
    assert (
        f"stack: {sum(real.values())} of 500 resources after the SAM transform, "
        f"{len(processed['Outputs'])} of 200 outputs, {roles} IAM roles"
    ) in result.stderr
    assert roles > limits.ACCOUNT_ROLES * limits.ROLE_SHARE_WARNING
    assert f"warning: the stack creates {roles} IAM roles" in result.stderr
    strict = run_agentfn("build", "--strict", cwd=tmp_path)
    assert strict.returncode == 1
    assert "--strict: refusing to build with 1 warning(s)" in strict.stderr
    small = write_spec(10, tmp_path / "small")
    assert "IAM roles;" not in _build(small).stderr
