"""What `agentfn build` makes of `triggers:` (issue #28): the schedule (expression, time zone,
flexible window off), the queue with its dead-letter queue and event source mapping, both
rules with their patterns, the unauthenticated webhook route; cfn-lint and `sam validate
--lint` clean; the trigger function's IAM, statement by statement, after the SAM transform."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from infra.sam.template import build_template, render
from infra.sam.triggers import TRIGGER_FUNCTION
from runtime.naming import agent_tag
from runtime.spec import AgentfnSpec
from runtime.workflows.records import workflow_tag
from tests.helpers import DEMO_SPEC, load_spec, tool_path
from tests.infra.cfn import allowed, role_statements, sam_transform

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "triggers" / "agents.yaml"
ACCOUNT = "arn:aws:{}:us-east-1:123456789012:{}"


@pytest.fixture(scope="module")
def spec() -> AgentfnSpec:
    return load_spec(FIXTURE)


@pytest.fixture(scope="module")
def template(spec: AgentfnSpec) -> dict[str, Any]:
    return build_template(spec)


@pytest.fixture(scope="module")
def deployed(template: dict[str, Any]) -> dict[str, Any]:
    return sam_transform(template)


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_the_schedule_has_its_expression_time_zone_and_no_flexible_window(
    template: dict[str, Any],
) -> None:
    schedules = _of_type(template, "AWS::Scheduler::Schedule")
    nightly = schedules["TriggerSupportNightlySchedule"]["Properties"]
    assert nightly["ScheduleExpression"] == "cron(0 7 * * ? *)"
    assert nightly["ScheduleExpressionTimezone"] == "Europe/Paris"
    assert nightly["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert nightly["Target"]["Arn"] == {"Fn::GetAtt": [TRIGGER_FUNCTION, "Arn"]}
    assert json.loads(nightly["Target"]["Input"]) == {
        "agentfn_trigger": "support/nightly",
        "time": "<aws.scheduler.scheduled-time>",
    }
    hourly = schedules["TriggerDigestHourlySchedule"]["Properties"]
    assert hourly["ScheduleExpression"] == "rate(1 hour)"
    assert hourly["ScheduleExpressionTimezone"] == "UTC"


def test_scheduled_and_rule_events_that_fail_are_parked_in_the_function_dlq(
    template: dict[str, Any], deployed: dict[str, Any]
) -> None:
    function = template["Resources"][TRIGGER_FUNCTION]["Properties"]
    assert function["DeadLetterQueue"] == {
        "Type": "SQS",
        "TargetArn": {"Fn::GetAtt": ["TriggerDeadLetterQueue", "Arn"]},
    }
    lambda_function = deployed["Resources"][TRIGGER_FUNCTION]["Properties"]
    assert lambda_function["DeadLetterConfig"] == {
        "TargetArn": {"Fn::GetAtt": ["TriggerDeadLetterQueue", "Arn"]}
    }


def test_the_queue_has_a_dead_letter_queue_and_a_mapping_reporting_item_failures(
    template: dict[str, Any],
) -> None:
    queues = _of_type(template, "AWS::SQS::Queue")
    queue = queues["TriggerSupportInboxQueue"]["Properties"]
    dlq = queues["TriggerSupportInboxDeadLetterQueue"]["Properties"]
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["TriggerSupportInboxDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 3,
    }
    assert queue["SqsManagedSseEnabled"] and dlq["SqsManagedSseEnabled"]
    assert dlq["MessageRetentionPeriod"] == 14 * 86400
    # Lambda's timeout must fit in the visibility timeout, or a message is delivered twice
    function = template["Resources"][TRIGGER_FUNCTION]["Properties"]
    assert function["Timeout"] <= queue["VisibilityTimeout"]
    (mapping,) = _of_type(template, "AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"] == {
        "FunctionName": {"Ref": TRIGGER_FUNCTION},
        "EventSourceArn": {"Fn::GetAtt": ["TriggerSupportInboxQueue", "Arn"]},
        "BatchSize": 1,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
    }


def test_both_rules_carry_their_patterns_and_pass_the_whole_event(
    template: dict[str, Any],
) -> None:
    rules = _of_type(template, "AWS::Events::Rule")
    uploads = rules["TriggerSupportUploadsRule"]["Properties"]
    assert uploads["EventPattern"] == {
        "source": ["aws.s3"],
        "detail-type": ["Object Created"],
        "detail": {
            "bucket": {"name": ["my-bucket"]},
            "object": {"key": [{"wildcard": "incoming/*.pdf"}]},
        },
    }
    assert "EventBusName" not in uploads  # S3 sends to the default bus
    orders = rules["TriggerSupportOrdersRule"]["Properties"]
    assert orders["EventPattern"] == {"source": ["shop.orders"], "detail-type": ["OrderPlaced"]}
    (target,) = orders["Targets"]
    assert target["InputTransformer"]["InputTemplate"] == (
        '{"agentfn_trigger":"support/orders","event":<aws.events.event>}'
    )
    permissions = {
        k: v
        for k, v in _of_type(template, "AWS::Lambda::Permission").items()
        if k.startswith("Trigger")
    }
    sources = {json.dumps(p["Properties"]["SourceArn"]) for p in permissions.values()}
    assert sources == {json.dumps({"Fn::GetAtt": [rule, "Arn"]}) for rule in rules}


def test_the_webhook_route_has_no_iam_auth_and_every_other_route_keeps_it(
    deployed: dict[str, Any],
) -> None:
    (api,) = _of_type(deployed, "AWS::ApiGateway::RestApi").values()
    paths = api["Properties"]["Body"]["paths"]
    hook = paths["/hooks/{agent}/{trigger}"]["post"]
    # SAM's `Authorizer: NONE`: a requirement naming no defined scheme, so no authorizer
    assert hook["security"] == [{"NONE": []}]
    schemes = api["Properties"]["Body"].get("components", {}).get("securitySchemes", {})
    assert "NONE" not in schemes and "AWS_IAM" in schemes
    uri = hook["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
    assert "${TriggerFunction.Arn}" in uri
    signed = [p for p in paths if p != "/hooks/{agent}/{trigger}"]
    assert signed and all(
        op.get("security") == [{"AWS_IAM": []}] for p in signed for op in paths[p].values()
    )


def _trigger_role(deployed: dict[str, Any]) -> list[dict[str, Any]]:
    return role_statements(deployed, f"{TRIGGER_FUNCTION}Role")


def test_the_trigger_function_iam_statement_by_statement(
    spec: AgentfnSpec, deployed: dict[str, Any]
) -> None:
    statements = {s["Sid"]: s for s in _trigger_role(deployed)}
    assert set(statements) == {
        "TriggeredRunsAndSessions",
        "StartTriggeredStateMachines",
        "TriggeredRunObjects",
        "ReadTriggerQueues",
        "WebhookSecrets",
        "ParkFailedEvents",
    }
    triggered = ["support", "billing", "restock"]
    tags = [agent_tag(a) for a in triggered]
    runs = statements["TriggeredRunsAndSessions"]
    assert runs["Action"] == ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"]
    assert sorted(runs["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]) == sorted(
        [f"RUN#{t}*" for t in tags]
        + [f"SES#{a}#*" for a in triggered]
        + [f"WF#{workflow_tag('digest')}*"]
    )
    machines = statements["StartTriggeredStateMachines"]
    assert machines["Action"] == "states:StartExecution" and len(machines["Resource"]) == 4
    objects = statements["TriggeredRunObjects"]
    assert len(objects["Resource"]) == 2 * len(triggered)
    queues = statements["ReadTriggerQueues"]
    assert sorted(queues["Action"]) == [
        "sqs:ChangeMessageVisibility",
        "sqs:DeleteMessage",
        "sqs:GetQueueAttributes",
        "sqs:ReceiveMessage",
    ]
    # the queues this stack made for triggers: `agentfn-{stack8}-trg-…`, no other queue
    assert queues["Resource"] == ["arn:aws:sqs:us-east-1:123456789012:agentfn-0123abcd-trg-*"]
    parked = statements["ParkFailedEvents"]
    assert parked["Action"] == "sqs:SendMessage"
    assert parked["Resource"] == ACCOUNT.format(
        "sqs", "agentfn-demo-TriggerDeadLetterQueue-RANDOM1234"
    )
    secrets = statements["WebhookSecrets"]
    assert secrets["Action"] == "secretsmanager:GetSecretValue"
    assert sorted(secrets["Resource"]) == [
        ACCOUNT.format("secretsmanager", "secret:agentfn/gh-hook-??????"),
        ACCOUNT.format("secretsmanager", "secret:agentfn/stripe-hook-??????"),
    ]


def test_the_trigger_function_may_start_only_triggered_agents_runs(
    deployed: dict[str, Any],
) -> None:
    statements = _trigger_role(deployed)
    table = next(s["Resource"] for s in statements if s["Sid"] == "TriggeredRunsAndSessions")

    def may_write_run(agent: str) -> bool:
        keys = {"dynamodb:LeadingKeys": [f"RUN#{agent_tag(agent)}0123"]}
        return allowed(statements, "dynamodb:PutItem", table, keys)

    assert may_write_run("support") and may_write_run("restock")
    assert not may_write_run("some-other-agent")
    assert not allowed(statements, "dynamodb:Scan", table)
    assert not allowed(statements, "lambda:InvokeFunction", "*")
    machine = ACCOUNT.format("states", "stateMachine:agentfn-0123abcd-{}")
    assert allowed(statements, "states:StartExecution", machine.format("support"))
    assert not allowed(statements, "states:StartExecution", machine.format("other"))


def test_a_schedule_role_is_assumed_by_scheduler_only_and_only_invokes_the_trigger_function(
    deployed: dict[str, Any],
) -> None:
    role = deployed["Resources"]["TriggerSupportNightlyScheduleRole"]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}
    statements = role_statements(deployed, "TriggerSupportNightlyScheduleRole")
    function = next(iter(s["Resource"] for s in statements))
    assert [s["Action"] for s in statements] == ["lambda:InvokeFunction"]
    assert allowed(statements, "lambda:InvokeFunction", function)
    assert not allowed(statements, "lambda:InvokeFunction", function.replace("Trigger", "Api"))
    assert not allowed(statements, "states:StartExecution", "*")


def test_no_triggers_add_nothing() -> None:
    template = build_template(load_spec(DEMO_SPEC))
    assert TRIGGER_FUNCTION not in template["Resources"]
    assert not [k for k in template["Resources"] if k.startswith("Trigger")]


def test_cfn_lint_and_sam_validate_are_clean(template: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "template.yaml"
    path.write_text(render(template))
    lint = subprocess.run(
        [tool_path("cfn-lint"), "--include-checks", "I", "--", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    sam = subprocess.run(
        [tool_path("sam"), "validate", "--lint", "--template-file", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "SAM_CLI_TELEMETRY": "0"},
    )
    assert sam.returncode == 0, sam.stdout + sam.stderr


def _many_triggered(count: int) -> AgentfnSpec:
    from runtime.spec import AgentfnSpec as Spec

    agents = {
        f"a{i:03d}" + "x" * 60: {
            "description": "d",
            "triggers": [
                {"name": "inbox", "queue": {}, "input": "{body}"},
                {
                    "name": "hook",
                    "webhook": {"secret": "${secret:s}", "signature": "github"},
                    "input": "{body}",
                },
            ],
        }
        for i in range(count)
    }
    return Spec.model_validate(
        {
            "version": 1,
            "defaults": {"model": "m"},
            "secrets": {"s": {"source": "secretsmanager"}},
            "models": {"m": {"provider": "scripted", "script": [{"text": "hi"}]}},
            "agents": agents,
        }
    )


@pytest.mark.parametrize("count", [1, 11, 12, 100])
def test_the_trigger_role_fits_iam_10_kb_however_many_agents_have_triggers(count: int) -> None:
    from tests.infra.cfn import pessimistic

    deployed = sam_transform(build_template(_many_triggered(count)))
    role = deployed["Resources"][f"{TRIGGER_FUNCTION}Role"]["Properties"]
    size = sum(
        len(json.dumps(pessimistic()(p["PolicyDocument"]), separators=(",", ":")))
        for p in role["Policies"]
    )
    assert size <= 10_240, size
    statements = {s["Sid"]: s for s in role_statements(deployed, f"{TRIGGER_FUNCTION}Role")}
    keys = statements["TriggeredRunsAndSessions"]["Condition"]["ForAllValues:StringLike"]
    if count <= 11:  # named one by one (64-character names: 11 fit the budget)
        assert len(keys["dynamodb:LeadingKeys"]) == 2 * count
    else:  # this stack's runs, by their fixed-size patterns
        assert keys["dynamodb:LeadingKeys"] == ["RUN#*", "SES#*", "WF#*"]
