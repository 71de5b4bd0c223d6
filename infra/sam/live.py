"""The WebSocket API that carries live runs when deployed (runtime.live.live_ws, handlers.live).

API Gateway's WebSocket API, IAM-authorized on `$connect` (unless `deployment.api_auth` is
`none`, like the REST API); routes `subscribe`,
`unsubscribe` and `$disconnect` go to one small function (`LiveFunction`) that keeps the
watch items; each agent function posts its runs' events and chunks to the watchers it finds
(`execute-api:ManageConnections` on this API's stage only, `WATCH#` items of its own runs
only). The stage is `live`; its URL is the `LiveUrl` output. `subscribe` needs a watch token
(runtime.live.watch_token) from the REST API, signed with `LiveWatchKey`: a secret the stack
generates (Secrets Manager), read by the API and live functions only.
With `deployment.access_logs`
the stage writes one JSON line per connect, message and disconnect to its own log group
(like the REST stage; both need the account's API Gateway CloudWatch Logs role). The
function has `deployment.reserved_concurrency.live` reserved, like the API's.
"""

from __future__ import annotations

import json
from typing import Any

from infra.sam import snapstart
from infra.sam.access_logs import WHO_CALLED
from infra.sam.data import TABLE
from infra.sam.grants import allow, leading_keys
from infra.sam.intrinsics import arn, get_arn, ref, sub
from runtime.live.watch_token import KEY_SECRET_ENV
from runtime.spec import AgentfnSpec

LIVE_API = "LiveApi"
LIVE_FUNCTION = "LiveFunction"
LIVE_STAGE = "live"
WATCH_KEY = "LiveWatchKey"
LIVE_ACCESS_LOGS = "LiveAccessLogs"
#: One JSON object per WebSocket event: who (the IAM identity on `$connect`), which
#: connection and route, and how it ended.
ACCESS_LOG_FORMAT = json.dumps(
    {
        **WHO_CALLED,
        "requestTime": "$context.requestTime",
        "eventType": "$context.eventType",
        "routeKey": "$context.routeKey",
        "connectionId": "$context.connectionId",
        "status": "$context.status",
        "error": "$context.error.message",
    },
    separators=(",", ":"),
)
ROUTES = {"$connect": "Connect", "$disconnect": "Disconnect", "subscribe": "Subscribe",
          "unsubscribe": "Unsubscribe"}  # fmt: skip
ENDPOINT = f"https://${{{LIVE_API}}}.execute-api.${{AWS::Region}}.${{AWS::URLSuffix}}/{LIVE_STAGE}"


def _connections_arn() -> Any:
    return arn("execute-api", f"${{{LIVE_API}}}/{LIVE_STAGE}/POST/@connections/*")


def resources(spec: AgentfnSpec) -> dict[str, Any]:
    integration = {
        "Type": "AWS::ApiGatewayV2::Integration",
        "Properties": {
            "ApiId": ref(LIVE_API),
            "IntegrationType": "AWS_PROXY",
            "IntegrationUri": sub(
                "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/"
                f"functions/{snapstart.invoke_sub(spec, LIVE_FUNCTION)}/invocations"
            ),
        },
    }
    found: dict[str, Any] = {
        LIVE_API: {
            "Type": "AWS::ApiGatewayV2::Api",
            "Properties": {
                "Name": sub("${AWS::StackName}-live"),
                "ProtocolType": "WEBSOCKET",
                "RouteSelectionExpression": "$request.body.action",
                "Description": "agentfn: watch runs live (subscribe / unsubscribe)",
            },
        },
        "LiveIntegration": integration,
        LIVE_FUNCTION: {
            "Type": "AWS::Serverless::Function",
            "Properties": {
                "Description": "agentfn live: who watches which run",
                "Handler": "handlers.live.handler",
                "MemorySize": 256,
                "Timeout": 29,
                "Environment": {
                    "Variables": {"AGENTFN_LIVE_ENDPOINT": sub(ENDPOINT), **watch_key_environment()}
                },
                "Policies": [{"Statement": _live_function_statements()}],
            },
        },
        WATCH_KEY: {
            "Type": "AWS::SecretsManager::Secret",
            # disposable: a new key only ends the tokens of the last 5 minutes
            "DeletionPolicy": "Delete",
            "UpdateReplacePolicy": "Delete",
            "Properties": {
                "Description": "agentfn: signs the tokens that let a caller watch a run live",
                "GenerateSecretString": {"PasswordLength": 64, "ExcludePunctuation": True},
            },
        },
        "LivePermission": {
            "Type": "AWS::Lambda::Permission",
            "Properties": {
                "Action": "lambda:InvokeFunction",
                "FunctionName": (
                    snapstart.invoke_arn(spec, LIVE_FUNCTION)
                    if spec.deployment.snapstart
                    else ref(LIVE_FUNCTION)
                ),
                "Principal": "apigateway.amazonaws.com",
                "SourceArn": arn("execute-api", f"${{{LIVE_API}}}/*"),
            },
        },
        "LiveDeployment": {
            "Type": "AWS::ApiGatewayV2::Deployment",
            "DependsOn": [f"Live{name}Route" for name in ROUTES.values()],
            "Properties": {"ApiId": ref(LIVE_API)},
        },
        "LiveStage": {
            "Type": "AWS::ApiGatewayV2::Stage",
            "Properties": {
                "ApiId": ref(LIVE_API),
                "StageName": LIVE_STAGE,
                "DeploymentId": ref("LiveDeployment"),
                "DefaultRouteSettings": {"ThrottlingBurstLimit": 100, "ThrottlingRateLimit": 50},
            },
        },
    }
    reserved = spec.deployment.reserved_concurrency.live
    if reserved is not None:
        found[LIVE_FUNCTION]["Properties"]["ReservedConcurrentExecutions"] = reserved
    if spec.deployment.access_logs:
        found[LIVE_ACCESS_LOGS] = {
            "Type": "AWS::Logs::LogGroup",
            "DeletionPolicy": "Delete",  # operational data with its own retention
            "UpdateReplacePolicy": "Delete",
            "Properties": {
                "LogGroupName": sub("/agentfn/${AWS::StackName}/live-access"),
                "RetentionInDays": spec.deployment.log_retention_days,
            },
        }
        found["LiveStage"]["Properties"]["AccessLogSettings"] = {
            # The group's ARN without the `:*` that its Arn attribute ends with.
            "DestinationArn": sub(
                "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:"
                f"${{{LIVE_ACCESS_LOGS}}}"
            ),
            "Format": ACCESS_LOG_FORMAT,
        }
    for key, name in ROUTES.items():
        route: dict[str, Any] = {
            "ApiId": ref(LIVE_API),
            "RouteKey": key,
            "Target": sub("integrations/${LiveIntegration}"),
        }
        iam = key == "$connect" and spec.deployment.api_auth == "iam"  # as the REST API
        route["AuthorizationType"] = "AWS_IAM" if iam else "NONE"
        found[f"Live{name}Route"] = {"Type": "AWS::ApiGatewayV2::Route", "Properties": route}
    return found


def _live_function_statements() -> list[dict[str, Any]]:
    table = get_arn(TABLE)
    return [
        allow("KeepWatches", ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                              "dynamodb:Query"], table, **leading_keys("WATCH#*", "CONN#*")),
        allow("ReadRunsWatched", ["dynamodb:GetItem", "dynamodb:Query"], table,
              **leading_keys("RUN#*")),
        allow("AnswerWatchers", "execute-api:ManageConnections", _connections_arn()),
        watch_key_statement(),
    ]  # fmt: skip


def watch_key_environment() -> dict[str, Any]:
    """Where the functions that issue and check watch tokens find the key (its ARN)."""
    return {KEY_SECRET_ENV: ref(WATCH_KEY)}


def watch_key_statement() -> dict[str, Any]:
    return allow("ReadWatchKey", "secretsmanager:GetSecretValue", ref(WATCH_KEY))


def agent_environment() -> dict[str, Any]:
    return {"AGENTFN_LIVE_ENDPOINT": sub(ENDPOINT)}


def agent_statements(tags: list[str]) -> list[dict[str, Any]]:
    """Post to the watchers of the runs it advances (after reading the run's watch flag);
    forget a watcher that is gone (and count it off the flag)."""
    watches = leading_keys(*(f"WATCH#{t}*" for t in tags))
    actions = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
    return [
        allow("FindWatchers", actions, get_arn(TABLE), **watches),
        allow("PostToWatchers", "execute-api:ManageConnections", _connections_arn()),
    ]


def outputs() -> dict[str, Any]:
    return {
        "LiveUrl": {
            "Description": "WebSocket URL to watch runs live (IAM auth; subscribe / unsubscribe)",
            "Value": sub(ENDPOINT.replace("https://", "wss://")),
        }
    }
