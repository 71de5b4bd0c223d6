"""Each function's execution role, written out instead of left to SAM.

SAM gives every function it makes a role for the managed `AWSLambdaBasicExecutionRole`
(`logs:CreateLogGroup`, `logs:CreateLogStream`, `logs:PutLogEvents` on `*`: any log group of
the account) and, whenever `Tracing` is set at all (`PassThrough` included),
`AWSXrayWriteOnlyAccess`. SAM has no switch to leave them out, so agentfn declares each role
itself, under the logical id SAM would have used (`{Function}Role`, one role per function as
before: no resource is added), with:

- the function's own statements (its `Policies`, moved here unchanged);
- logs: create streams in and write to the one log group every function logs to (the
  function's `LoggingConfig.LogGroup`, a group the template declares, so it exists before the
  function runs and nothing needs `logs:CreateLogGroup`);
- X-Ray: `PutTraceSegments`/`PutTelemetryRecords` only when `deployment.tracing` is on.
  X-Ray has no resource-level permissions for them: IAM accepts only `"*"` there.

The logs and X-Ray statements are the same for every function, so they are one managed policy
(`FunctionBasePolicy`) that every role attaches: inline copies in 100 roles would cost the
template about 60 KB of CloudFormation's 1 MB.

A function that already names its `Role` (the code_execute sandbox, which is granted nothing)
is left as it is.
"""

from __future__ import annotations

from typing import Any

from infra.sam.intrinsics import get_arn, ref, sub
from runtime.spec import AgentfnSpec

BASE_POLICY = "FunctionBasePolicy"
LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "lambda.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


def log_statement(log_group: str) -> dict[str, Any]:
    """Write to log group `log_group` (a logical id) and nowhere else. A group's `Arn`
    attribute ends in `:*` (its streams); the group's own ARN is listed too."""
    return {
        "Sid": "WriteOwnLogGroup",
        "Effect": "Allow",
        "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": [
            sub(
                "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:"
                f"${{{log_group}}}"
            ),
            get_arn(log_group),
        ],
    }


def xray_statement() -> dict[str, Any]:
    return {
        "Sid": "WriteTraces",
        "Effect": "Allow",
        # X-Ray accepts only "*" for these two actions (no resource-level permissions).
        "Action": ["xray:PutTraceSegments", "xray:PutTelemetryRecords"],
        "Resource": "*",
    }


def base_policy(spec: AgentfnSpec, log_group: str) -> dict[str, Any]:
    statements = [log_statement(log_group)]
    if spec.deployment.tracing:
        statements.append(xray_statement())
    return {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {
            "Description": "agentfn: what every function needs (its log group; X-Ray if on)",
            "PolicyDocument": {"Version": "2012-10-17", "Statement": statements},
        },
    }


def explicit_roles(spec: AgentfnSpec, resources: dict[str, Any], log_group: str) -> None:
    """Give every SAM function of `resources` without a `Role` its own declared role (in
    place; the role follows its function in the template's order)."""
    out: dict[str, Any] = {}
    for logical_id, resource in resources.items():
        out[logical_id] = resource
        props = resource.get("Properties", {})
        if resource["Type"] != "AWS::Serverless::Function" or "Role" in props:
            continue
        statements = [s for policy in props.pop("Policies", []) for s in policy["Statement"]]
        role_id = f"{logical_id}Role"
        props["Role"] = get_arn(role_id)
        role: dict[str, Any] = {
            "AssumeRolePolicyDocument": LAMBDA_TRUST,
            "ManagedPolicyArns": [ref(BASE_POLICY)],
        }
        if statements:
            role["Policies"] = [
                {
                    "PolicyName": f"{logical_id}RolePolicy0",
                    "PolicyDocument": {"Version": "2012-10-17", "Statement": statements},
                }
            ]
        out[role_id] = {"Type": "AWS::IAM::Role", "Properties": role}
    out[BASE_POLICY] = base_policy(spec, log_group)
    resources.clear()
    resources.update(out)
