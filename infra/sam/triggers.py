"""The AWS sources of `triggers:` and the one function that turns their events into runs.

Per trigger kind:
- schedule → an EventBridge Scheduler schedule (expression, time zone, flexible window off
  unless set) whose target is the trigger function with a fixed input naming the trigger,
  and a role of its own that Scheduler alone (this account's) may assume and that may only
  invoke the trigger function;
- webhook → `POST /hooks/{agent}/{trigger}` on the REST API, without IAM auth (the sender
  cannot sign with SigV4): the function checks the signature instead;
- queue → a queue the stack creates (SSE, a dead-letter queue it redrives to after
  `max_receives` deliveries) or an existing one by ARN, read by an event source mapping
  with partial batch failure reporting;
- s3 → a rule on the default bus for S3's `Object Created` events of the bucket (and key
  prefix/suffix): the bucket must send its notifications to EventBridge;
- event → a rule with the given pattern on the deployment's (or the named) bus.

Rules pass the whole event (`<aws.events.event>`) wrapped with the trigger's name. The
function's role reaches only the runs of the agents and workflows that declare triggers:
their run and session partitions, their objects, their state machines, the webhook
secrets, the queues it reads.
"""

from __future__ import annotations

import json
from typing import Any

from infra.sam.api import API
from infra.sam.data import BUCKET, TABLE
from infra.sam.grants import THIS_STACKS_STATE_MACHINES, allow, leading_keys
from infra.sam.intrinsics import arn, get_arn, ref, sub
from infra.sam.naming import (
    NAME_PREFIX,
    agent_physical_name,
    logical_id,
    workflow_physical_name,
)
from runtime.naming import agent_tag
from runtime.spec import AgentfnSpec
from runtime.spec.triggers import TriggerConfig
from runtime.triggers.events import TARGET_KEY
from runtime.triggers.starter import queue_name
from runtime.workflows.records import workflow_tag

TRIGGER_FUNCTION = "TriggerFunction"
TRIGGER_DLQ = "TriggerDeadLetterQueue"
WEBHOOK_PATH = "/hooks/{agent}/{trigger}"
DLQ_RETENTION_SECONDS = 14 * 86400  # SQS's longest: time to look at what was parked
QUEUE_RETENTION_SECONDS = 4 * 86400  # SQS's default, stated
#: Characters the role's per-agent grants may take (IAM allows 10,240 for all inline policies,
#: measured with the longest partition, region and account: tests/infra/test_template_triggers).
SCOPED_BUDGET = 8000


def _scoped_size(names: list[str]) -> int:
    """About what naming these agents/workflows one by one costs the policy (a run key, a
    session key, a state machine ARN, two object prefixes each)."""
    return sum(560 + 2 * len(name) for name in names)


def owners(spec: AgentfnSpec) -> list[tuple[str, str, list[TriggerConfig]]]:
    """(kind, name, triggers) of every agent and workflow that declares triggers."""
    found = [("agent", a, c.triggers) for a, c in spec.agents.items() if c.triggers]
    found += [("workflow", w, c.triggers) for w, c in spec.workflows.items() if c.triggers]
    return found


def _id(owner: str, trigger: str, kind: str) -> str:
    return f"Trigger{logical_id(owner)}{logical_id(trigger)}{kind}"


def resources(spec: AgentfnSpec) -> dict[str, Any]:
    """Every trigger resource, or nothing when no agent or workflow declares one."""
    declared = owners(spec)
    if not declared:
        return {}
    out: dict[str, Any] = {TRIGGER_FUNCTION: trigger_function(spec)}
    if _asynchronous(spec):
        out[TRIGGER_DLQ] = {
            "Type": "AWS::SQS::Queue",
            "DeletionPolicy": "Delete",
            "UpdateReplacePolicy": "Delete",
            "Properties": {
                "MessageRetentionPeriod": DLQ_RETENTION_SECONDS,
                "SqsManagedSseEnabled": True,
            },
        }
    for _, owner, triggers in declared:
        for trigger in triggers:
            out.update(_source(spec, owner, trigger))
    return out


def _asynchronous(spec: AgentfnSpec) -> bool:
    """Whether Scheduler or EventBridge rules invoke the function (asynchronously: an event
    whose run cannot start is retried twice by Lambda, then parked in TRIGGER_DLQ)."""
    kinds = {t.kind for _, _, triggers in owners(spec) for t in triggers}
    return bool(kinds & {"schedule", "s3", "event"})


def trigger_function(spec: AgentfnSpec) -> dict[str, Any]:
    props: dict[str, Any] = {
        "Description": "agentfn triggers: schedules, webhooks, queues, S3 and events into runs",
        "Handler": "handlers.trigger.handler",
        "MemorySize": 512,
        "Timeout": 60,  # starts runs (the state machines do the work); ≤ queues' visibility
        "Environment": {"Variables": {"AGENTFN_TRIGGER_QUEUE_PREFIX": sub(NAME_PREFIX)}},
        "Policies": [{"Statement": trigger_statements(spec)}],
    }
    if _asynchronous(spec):  # Scheduler and rules invoke it asynchronously: park failures
        props["DeadLetterQueue"] = {"Type": "SQS", "TargetArn": get_arn(TRIGGER_DLQ)}
        props["Policies"][0]["Statement"].append(
            allow("ParkFailedEvents", "sqs:SendMessage", get_arn(TRIGGER_DLQ))
        )
    if any(t.webhook for _, _, triggers in owners(spec) for t in triggers):
        route: dict[str, Any] = {"RestApiId": ref(API), "Path": WEBHOOK_PATH, "Method": "post"}
        if spec.deployment.api_auth == "iam":
            route["Auth"] = {"Authorizer": "NONE"}  # signed by the sender instead (above)
        props["Events"] = {"Webhook": {"Type": "Api", "Properties": route}}
    return {"Type": "AWS::Serverless::Function", "Properties": props}


def trigger_statements(spec: AgentfnSpec) -> list[dict[str, Any]]:
    """What starting the triggered runs needs, and nothing of any other agent's. When naming
    them one by one would outgrow SCOPED_BUDGET (about a dozen agents), the grants name this
    stack's runs by their fixed-size patterns instead (as the API's do), so the role's
    inline policy stays under IAM's 10,240 characters whatever the number of triggers."""
    declared = owners(spec)
    agents = [name for kind, name, _ in declared if kind == "agent"]
    workflows = [name for kind, name, _ in declared if kind == "workflow"]
    if _scoped_size([name for _, name, _ in declared]) > SCOPED_BUDGET:
        keys, machines = ["RUN#*", "SES#*", "WF#*"], [THIS_STACKS_STATE_MACHINES]
        objects = [sub(f"${{{BUCKET}.Arn}}/{kind}/*") for kind in ("bodies", "results")]
    else:
        tags = [agent_tag(a) for a in agents]
        keys = [f"RUN#{t}*" for t in tags] + [f"SES#{a}#*" for a in agents]
        keys += [f"WF#{workflow_tag(w)}*" for w in workflows]
        machines = [arn("states", f"stateMachine:{agent_physical_name(a)}") for a in agents]
        machines += [arn("states", f"stateMachine:{workflow_physical_name(w)}") for w in workflows]
        objects = [
            sub(f"${{{BUCKET}.Arn}}/{kind}/{t}*") for t in tags for kind in ("bodies", "results")
        ]
    statements = [
        allow(
            "TriggeredRunsAndSessions",
            ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"],
            get_arn(TABLE),
            **leading_keys(*keys),
        ),
        allow("StartTriggeredStateMachines", "states:StartExecution", machines),
    ]
    if objects:
        statements.append(allow("TriggeredRunObjects", ["s3:GetObject", "s3:PutObject"], objects))
    queues: list[Any] = [
        trigger.queue.arn
        for _, _, triggers in declared
        for trigger in triggers
        if trigger.queue is not None and trigger.queue.arn is not None
    ]
    if any(t.queue is not None and t.queue.arn is None for _, _, ts in declared for t in ts):
        queues.append(arn("sqs", f"{NAME_PREFIX}trg-*"))  # the queues this stack made for them
    if queues:
        actions = [
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "sqs:ChangeMessageVisibility",
            "sqs:GetQueueAttributes",
        ]
        statements.append(allow("ReadTriggerQueues", actions, queues))
    return statements + _secret_statements(spec, declared)


def _secret_statements(
    spec: AgentfnSpec, declared: list[tuple[str, str, list[TriggerConfig]]]
) -> list[dict[str, Any]]:
    from infra.sam.iam import _secret_arn  # the one place a secret's ARN is derived
    from runtime.spec.shared import secret_names

    names = sorted(
        {
            name
            for _, _, triggers in declared
            for t in triggers
            if t.webhook is not None
            for name in secret_names(t.webhook.secret)
        }
    )
    by_source: dict[str, list[Any]] = {"secretsmanager": [], "ssm": []}
    for name in names:
        source, resource = _secret_arn(spec, name)
        by_source[source].append(resource)
    out = []
    if by_source["secretsmanager"]:
        out.append(
            allow("WebhookSecrets", "secretsmanager:GetSecretValue", by_source["secretsmanager"])
        )
    if by_source["ssm"]:
        actions = ["ssm:GetParameter", "ssm:GetParameters"]
        out.append(allow("WebhookSecretParameters", actions, by_source["ssm"]))
    return out


def _queue_arn(owner: str, trigger: TriggerConfig) -> Any:
    assert trigger.queue is not None
    return trigger.queue.arn or get_arn(_id(owner, trigger.name, "Queue"))


def _target_input(owner: str, trigger: str) -> str:
    return f"{owner}/{trigger}"


def _source(spec: AgentfnSpec, owner: str, trigger: TriggerConfig) -> dict[str, Any]:
    if trigger.schedule is not None:
        return _schedule(owner, trigger)
    if trigger.queue is not None:
        return _queue(owner, trigger)
    if trigger.s3 is not None or trigger.event is not None:
        return _rule(spec, owner, trigger)
    return {}  # a webhook: the function's route


def _schedule(owner: str, trigger: TriggerConfig) -> dict[str, Any]:
    role_id = _id(owner, trigger.name, "ScheduleRole")
    payload = {
        TARGET_KEY: _target_input(owner, trigger.name),
        "time": "<aws.scheduler.scheduled-time>",
    }
    window: dict[str, Any] = {"Mode": "OFF"}
    if trigger.flexible_window:
        minutes = max(1, round(trigger.flexible_window / 60))
        window = {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": minutes}
    schedule: dict[str, Any] = {
        "Type": "AWS::Scheduler::Schedule",
        "Properties": {
            "Description": f"agentfn trigger {trigger.name!r} of {owner!r}",
            "ScheduleExpression": trigger.schedule,
            "ScheduleExpressionTimezone": trigger.timezone or "UTC",
            "FlexibleTimeWindow": window,
            "State": "ENABLED",
            "Target": {
                "Arn": get_arn(TRIGGER_FUNCTION),
                "RoleArn": get_arn(role_id),
                "Input": json.dumps(payload, separators=(",", ":")),
                "RetryPolicy": {"MaximumRetryAttempts": 3},
            },
        },
    }
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "scheduler.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                        "Condition": {"StringEquals": {"aws:SourceAccount": ref("AWS::AccountId")}},
                    }
                ],
            },
            "Policies": [
                {
                    "PolicyName": "InvokeTriggerFunction",
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            allow(
                                "InvokeTriggerFunction",
                                "lambda:InvokeFunction",
                                get_arn(TRIGGER_FUNCTION),
                            )
                        ],
                    },
                }
            ],
        },
    }
    return {_id(owner, trigger.name, "Schedule"): schedule, role_id: role}


def _queue(owner: str, trigger: TriggerConfig) -> dict[str, Any]:
    queue = trigger.queue
    assert queue is not None
    out: dict[str, Any] = {}
    if queue.arn is None:
        queue_id, dlq_id = (
            _id(owner, trigger.name, "Queue"),
            _id(owner, trigger.name, "DeadLetterQueue"),
        )
        name = NAME_PREFIX + queue_name(owner, trigger.name)
        # Messages are transient (a run's state is in the runs' table): the queues go with
        # the stack, stated.
        kept = {"DeletionPolicy": "Delete", "UpdateReplacePolicy": "Delete"}
        out[dlq_id] = {
            "Type": "AWS::SQS::Queue",
            **kept,
            "Properties": {
                "QueueName": sub(name + "-dlq"),
                "MessageRetentionPeriod": DLQ_RETENTION_SECONDS,
                "SqsManagedSseEnabled": True,
            },
        }
        out[queue_id] = {
            "Type": "AWS::SQS::Queue",
            **kept,
            "Properties": {
                "QueueName": sub(name),
                "MessageRetentionPeriod": QUEUE_RETENTION_SECONDS,
                "VisibilityTimeout": int(queue.visibility_timeout),
                "SqsManagedSseEnabled": True,
                "RedrivePolicy": {
                    "deadLetterTargetArn": get_arn(dlq_id),
                    "maxReceiveCount": queue.max_receives,
                },
            },
        }
    out[_id(owner, trigger.name, "Mapping")] = {
        "Type": "AWS::Lambda::EventSourceMapping",
        "Properties": {
            "FunctionName": ref(TRIGGER_FUNCTION),
            "EventSourceArn": _queue_arn(owner, trigger),
            "BatchSize": queue.batch_size,
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    }
    return out


def event_pattern(trigger: TriggerConfig) -> dict[str, Any]:
    """The rule's pattern: S3's `Object Created` on the bucket (prefix/suffix), or the
    event trigger's source and detail type."""
    if trigger.s3 is not None:
        s3 = trigger.s3
        detail: dict[str, Any] = {"bucket": {"name": [s3.bucket]}}
        if s3.prefix and s3.suffix:
            wildcard = _escaped(s3.prefix) + "*" + _escaped(s3.suffix)
            detail["object"] = {"key": [{"wildcard": wildcard}]}
        elif s3.prefix:
            detail["object"] = {"key": [{"prefix": s3.prefix}]}
        elif s3.suffix:
            detail["object"] = {"key": [{"suffix": s3.suffix}]}
        return {"source": ["aws.s3"], "detail-type": ["Object Created"], "detail": detail}
    assert trigger.event is not None
    pattern: dict[str, Any] = {"source": list(trigger.event.source)}
    if trigger.event.detail_type:
        pattern["detail-type"] = list(trigger.event.detail_type)
    return pattern


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("*", "\\*")


def _rule(spec: AgentfnSpec, owner: str, trigger: TriggerConfig) -> dict[str, Any]:
    rule_id = _id(owner, trigger.name, "Rule")
    bus = "default"
    if trigger.event is not None:
        bus = trigger.event.bus or spec.deployment.event_bus
    template = (
        '{"'
        + TARGET_KEY
        + '":'
        + json.dumps(_target_input(owner, trigger.name))
        + ',"event":<aws.events.event>}'
    )
    props: dict[str, Any] = {
        "Description": f"agentfn trigger {trigger.name!r} of {owner!r}",
        "EventPattern": event_pattern(trigger),
        "State": "ENABLED",
        "Targets": [
            {
                "Id": "TriggerFunction",
                "Arn": get_arn(TRIGGER_FUNCTION),
                "InputTransformer": {"InputPathsMap": {}, "InputTemplate": template},
            }
        ],
    }
    if bus != "default":
        props["EventBusName"] = bus
    permission = {
        "Type": "AWS::Lambda::Permission",
        "Properties": {
            "Action": "lambda:InvokeFunction",
            "FunctionName": ref(TRIGGER_FUNCTION),
            "Principal": "events.amazonaws.com",
            "SourceArn": get_arn(rule_id),
        },
    }
    return {
        rule_id: {"Type": "AWS::Events::Rule", "Properties": props},
        _id(owner, trigger.name, "Permission"): permission,
    }
