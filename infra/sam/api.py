"""The REST API: its stage (auth, throttling, access logs) and the function behind it."""

from __future__ import annotations

import json
from typing import Any

from infra.sam import grants, iam, layers, live
from infra.sam.access_logs import WHO_CALLED
from infra.sam.data import IDEMPOTENCY_TABLE
from infra.sam.intrinsics import ref, sub
from runtime.routes import PROTOCOL_ROUTES, ROUTES, Route
from runtime.spec import AgentfnSpec

API = "Api"
API_FUNCTION = "ApiFunction"
ACCESS_LOGS = "ApiAccessLogs"

#: One JSON object per request: who called, what and how it ended.
ACCESS_LOG_FORMAT = json.dumps(
    {
        **WHO_CALLED,
        "principalId": "$context.authorizer.principalId",
        "requestTime": "$context.requestTime",
        "httpMethod": "$context.httpMethod",
        "resourcePath": "$context.resourcePath",
        "path": "$context.path",
        "status": "$context.status",
        "protocol": "$context.protocol",
        "responseLength": "$context.responseLength",
    },
    separators=(",", ":"),
)


def api(spec: AgentfnSpec) -> dict[str, Any]:
    """The stage: IAM auth by default, stage-wide throttling (a caller's burst is answered
    429 by API Gateway instead of scaling Lambda and Step Functions), and access logs."""
    d = spec.deployment
    props: dict[str, Any] = {
        # What CloudFormation names it anyway (the OpenAPI title SAM writes), stated: the
        # 5XX alarm reads the metric by this name (dimension ApiName).
        "Name": ref("AWS::StackName"),
        "StageName": d.stage_name,
        "TracingEnabled": d.tracing,
        "EndpointConfiguration": {"Type": "REGIONAL"},
        "MethodSettings": [
            {
                "ResourcePath": "/*",
                "HttpMethod": "*",
                "ThrottlingRateLimit": d.api_throttle.rate_limit,
                "ThrottlingBurstLimit": d.api_throttle.burst_limit,
            }
        ],
    }
    if d.access_logs:
        props["AccessLogSetting"] = {
            # The log group's ARN without the `:*` that its Arn attribute ends with.
            "DestinationArn": sub(
                "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:"
                f"${{{ACCESS_LOGS}}}"
            ),
            "Format": ACCESS_LOG_FORMAT,
        }
    if d.api_auth == "iam":
        props["Auth"] = {"DefaultAuthorizer": "AWS_IAM"}
    return {"Type": "AWS::Serverless::Api", "Properties": props}


def protocol_routes(spec: AgentfnSpec) -> list[Route]:
    """The A2A routes when some agent is served over A2A, /mcp when some is over MCP: on
    the same API, so the stage's auth (IAM by default) guards them as the REST routes."""
    wanted = {
        "A2aAgentCard": any(spec.serves(a, "a2a") for a in spec.agents),
        "A2aRpc": any(spec.serves(a, "a2a") for a in spec.agents),
        "McpServer": layers.serves(spec, "mcp"),  # agents, and workflows with the default
    }
    return [route for route in PROTOCOL_ROUTES if wanted[route.name]]


def api_function(spec: AgentfnSpec) -> dict[str, Any]:
    """The function behind every route, with concurrency reserved for it (and capped) by
    default: agent runs share the account's pool and can hold slots for minutes, and the
    front door must still answer (`deployment.reserved_concurrency.api`)."""
    events = {
        route.name: {
            "Type": "Api",
            "Properties": {
                "RestApiId": ref(API),
                "Path": route.path,
                "Method": route.method.lower(),
            },
        }
        for route in (*ROUTES, *protocol_routes(spec))
    }
    function: dict[str, Any] = {
        "Type": "AWS::Serverless::Function",
        "Properties": {
            "Description": "agentfn API: start runs, read results, approve, reply, cancel",
            "Handler": "handlers.api.handler",
            "MemorySize": 512,
            "Timeout": 29,
            "Environment": {
                "Variables": {
                    "AGENTFN_IDEMPOTENCY_TABLE": ref(IDEMPOTENCY_TABLE),
                    **live.agent_environment(),  # an inline advance is watched too
                    **live.watch_key_environment(),  # it issues watch tokens
                }
            },
            "Policies": [
                {
                    "Statement": [
                        *grants.api_statements(spec),
                        *live.agent_statements([""]),
                        live.watch_key_statement(),
                        *iam.remote_answer_statements(spec),
                    ]
                }
            ],
            "Events": events,
        },
    }
    reserved = spec.deployment.reserved_concurrency.api
    if reserved is not None:
        function["Properties"]["ReservedConcurrentExecutions"] = reserved
    return function
