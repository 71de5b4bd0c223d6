"""Execution logs of every state machine (agents and workflows): level ERROR, without
execution data, into one log group with the deployment's retention.

ERROR logs the events of a failed execution (the failed task, the caught error, the
execution's own failure) and nothing of a healthy one, so the group costs nothing while all
is well; `IncludeExecutionData: false` keeps inputs and outputs (run ids only, but still)
out of the logs. One group for the stack, whatever the number of state machines: each event
names its execution's ARN.

The group's name starts with `/aws/vendedlogs/`: Step Functions delivers through CloudWatch
Logs' vended-log delivery, which for other names adds the group to a resource policy of the
account (at most 10 such policies per region); under this prefix it does not need one.
"""

from __future__ import annotations

from typing import Any

from infra.sam.intrinsics import get_arn, ref, sub
from runtime.spec import AgentfnSpec

STATE_MACHINE_LOGS = "StateMachineLogs"
LOG_DELIVERY_POLICY = "StateMachineLogDelivery"

#: What a state machine's role needs for Step Functions to set up its log delivery. These
#: actions do not support resource-level permissions: AWS requires `"Resource": "*"` for them
#: (Step Functions developer guide, "IAM policies for logging to CloudWatch Logs"). They let
#: the role manage log *deliveries*; they grant no reading of any log.
LOG_DELIVERY_ACTIONS = [
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
]


def log_group(spec: AgentfnSpec) -> dict[str, Any]:
    return {
        "Type": "AWS::Logs::LogGroup",
        "DeletionPolicy": "Delete",  # operational data with its own retention
        "UpdateReplacePolicy": "Delete",
        "Properties": {
            "LogGroupName": sub("/aws/vendedlogs/states/agentfn-${AWS::StackName}"),
            "RetentionInDays": spec.deployment.log_retention_days,
        },
    }


def log_delivery_policy() -> dict[str, Any]:
    """One managed policy for every state machine's role: the statement is the same for all,
    and 100 inline copies would cost the template about 60 KB of its 1 MB."""
    return {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {
            "Description": "agentfn: Step Functions sets up the execution-log delivery",
            "PolicyDocument": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "DeliverExecutionLogs",
                        "Effect": "Allow",
                        "Action": LOG_DELIVERY_ACTIONS,
                        # AWS requires "*" here: these actions take no resource ARN.
                        "Resource": "*",
                    }
                ],
            },
        },
    }


def add_logging(spec: AgentfnSpec, resources: dict[str, Any]) -> None:
    """Give every SAM state machine of `resources` its logging and the log-delivery policy
    (in place), and declare the group they log to and that policy."""
    machines = [r for r in resources.values() if r["Type"] == "AWS::Serverless::StateMachine"]
    if not machines:
        return
    resources[STATE_MACHINE_LOGS] = log_group(spec)
    resources[LOG_DELIVERY_POLICY] = log_delivery_policy()
    for machine in machines:
        props = machine["Properties"]
        props["Logging"] = {
            "Level": "ERROR",
            "IncludeExecutionData": False,
            "Destinations": [
                {"CloudWatchLogsLogGroup": {"LogGroupArn": get_arn(STATE_MACHINE_LOGS)}}
            ],
        }
        # SAM attaches a policy given by reference as a managed policy of the role it makes.
        props.setdefault("Policies", []).append(ref(LOG_DELIVERY_POLICY))
