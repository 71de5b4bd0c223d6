"""Live runs when deployed, on moto: a watcher subscribes over the WebSocket API's function
(events shaped as API Gateway sends them for WebSocket routes), an agent's run publishes its
events and its streamed text to it through moto's API Gateway Management API, a late
watcher catches up from the store, unsubscribe and disconnect stop delivery, a gone
connection is forgotten; and the template's WebSocket API and least-privilege grants.
Subscribing takes a watch token from the REST API (issue 22, point 13: a connection alone
may watch nothing; at most MAX_SUBSCRIPTIONS runs per connection; `$disconnect` and the
publisher read every page of watches): tests/handlers/test_live_rights.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import boto3

import handlers.live
from infra.local.aws import LOCAL_REGION
from infra.sam import live
from infra.sam.template import build_template
from runtime.engine.loop import Engine
from runtime.live.live_ws import WebSocketPublisher
from runtime.spec import AgentfnSpec
from tests.helpers import DEMO_SPEC, load_spec
from tests.infra.cfn import function_statements
from tests.runtime.engine.kit import call, make_spec

DOMAIN = "abc123.execute-api.us-east-1.amazonaws.com"
ENDPOINT = f"https://{DOMAIN}/live"
SCRIPT: list[dict[str, Any]] = [
    {"text": "Looking it up.", "tool_calls": [call("echo", {"text": "ORD-1"})]},
    {"text": "ORD-1 left the warehouse this morning and arrives on Friday."},
]


def ws_event(route: str, connection: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """A WebSocket route's proxy event, as API Gateway sends it to the integration."""
    kind = {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}.get(route, "MESSAGE")
    return {
        "requestContext": {
            "routeKey": route, "eventType": kind, "connectionId": connection,
            "domainName": DOMAIN, "stage": "live", "apiId": "abc123",
            "requestId": "r-1", "connectedAt": 1795600000000,
            "identity": {"sourceIp": "192.0.2.10", "userArn": "arn:aws:iam::123456789012:user/watcher"},
        },
        "isBase64Encoded": False,
        **({"body": json.dumps(body)} if body is not None else {}),
    }  # fmt: skip


def token_for(run_id: str) -> str:
    """A watch token signed with the stack's key (the REST route's own: test_live_rights)."""
    from runtime.live.watch_token import issue, stack_key

    return issue(stack_key(lambda: boto3.client("secretsmanager")), run_id)[0]


def subscribe(run_id: str, **more: Any) -> dict[str, Any]:
    return {"action": "subscribe", "run_id": run_id, "token": token_for(run_id), **more}


def received(connection: str) -> list[dict[str, Any]]:
    """What moto's Management API holds for the connection: the posted messages, in order."""
    from moto.apigatewaymanagementapi.models import apigatewaymanagementapi_backends

    data = apigatewaymanagementapi_backends["123456789012"][LOCAL_REGION].connections[connection].data  # fmt: skip
    text, found, decoder = data.decode(), [], json.JSONDecoder()
    while text:
        value, end = decoder.raw_decode(text)
        found.append(value)
        text = text[end:]
    return found


def _engine(clients: Any) -> tuple[Engine, WebSocketPublisher]:
    management = boto3.client("apigatewaymanagementapi", endpoint_url=ENDPOINT, region_name=LOCAL_REGION)  # fmt: skip
    publisher = WebSocketPublisher(clients.dynamodb, clients.table, management)
    spec = make_spec(SCRIPT, tools=["echo"])
    engine = Engine(spec, clients.store(), listener=publisher.on_event, chunks=publisher.on_chunk)
    return engine, publisher


def test_a_watcher_gets_every_event_once_and_the_text_in_batches(aws: Any) -> None:
    engine, publisher = _engine(aws)
    head = engine.start("a", "where is ORD-1?")
    publisher.flush()  # run_started is delivered (to no one) before anyone subscribes
    assert handlers.live.handler(ws_event("$connect", "early"), None) == {"statusCode": 200}
    handlers.live.handler(ws_event("subscribe", "early", subscribe(head.run_id)), None)
    head = asyncio.run(engine.advance(head.run_id))
    publisher.flush()
    assert head.status == "succeeded"
    messages = received("early")
    assert messages[0] == {"type": "subscribed", "run_id": head.run_id}
    seqs = [m["event"]["seq"] for m in messages if m["type"] == "event"]
    assert seqs == list(range(len(seqs))) and messages[-1]["event"]["type"] == "run_completed"
    chunks = [m["chunk"] for m in messages if m["type"] == "chunk"]
    words = len(SCRIPT[1]["text"].split())
    assert 1 <= len([c for c in chunks if c["turn"] == 2]) < words  # batched, not per word
    assert "".join(c["text"] for c in chunks if c["turn"] == 2) == SCRIPT[1]["text"]
    # a watcher arriving after the end catches up from the store, from `after`
    handlers.live.handler(ws_event("subscribe", "late", subscribe(head.run_id, after=3)), None)
    late = [m["event"]["seq"] for m in received("late") if m["type"] == "event"]
    assert late == seqs[4:]


def test_unsubscribe_disconnect_and_bad_messages(aws: Any) -> None:
    engine, publisher = _engine(aws)
    head = engine.start("a", "where is ORD-1?")
    publisher.flush()  # run_started is delivered (to no one) before anyone subscribes
    sub = subscribe(head.run_id)
    for connection in ("leaves", "drops"):
        handlers.live.handler(ws_event("subscribe", connection, sub), None)
    handlers.live.handler(ws_event("unsubscribe", "leaves", {"action": "unsubscribe", "run_id": head.run_id}), None)  # fmt: skip
    handlers.live.handler(ws_event("$disconnect", "drops"), None)
    watches = aws.dynamodb.scan(TableName=aws.table)["Items"]
    assert not [i for i in watches if i["pk"]["S"].startswith(("WATCH#", "CONN#"))]
    before = {c: len(received(c)) for c in ("leaves", "drops")}
    asyncio.run(engine.advance(head.run_id))
    publisher.flush()
    assert {c: len(received(c)) for c in ("leaves", "drops")} == before  # nothing more
    for body, said in (
        (subscribe("nope"), "not found"),
        ({"action": "subscribe"}, "run_id"),
        (subscribe(head.run_id, after="x"), "after"),
    ):
        handlers.live.handler(ws_event("subscribe", "asks", body), None)
        assert said in received("asks")[-1]["error_message"]


def test_a_gone_connection_loses_its_watch(aws: Any) -> None:
    engine, publisher = _engine(aws)
    head = engine.start("a", "where is ORD-1?")
    publisher.flush()  # run_started is delivered (to no one) before anyone subscribes
    handlers.live.handler(ws_event("subscribe", "gone", subscribe(head.run_id)), None)

    def gone(request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        body = b'{"message": "Gone"}'
        return AWSResponse(request.url, 410, {"x-amzn-ErrorType": "GoneException"}, _Raw(body))

    publisher.management.meta.events.register_first("before-send", gone)  # before moto
    assert asyncio.run(engine.advance(head.run_id)).status == "succeeded"  # the run never cares
    publisher.flush()
    items = aws.dynamodb.scan(TableName=aws.table)["Items"]
    assert not [i for i in items if i["pk"]["S"] == f"WATCH#{head.run_id}"]


class _Raw:
    def __init__(self, body: bytes):
        self.body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.body


def test_the_template_has_the_websocket_api_and_scoped_grants() -> None:
    resources = build_template(load_spec(DEMO_SPEC))["Resources"]
    api = resources[live.LIVE_API]["Properties"]
    assert (
        api["ProtocolType"] == "WEBSOCKET"
        and api["RouteSelectionExpression"] == "$request.body.action"
    )
    routes = {r["Properties"]["RouteKey"]: r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Route"}  # fmt: skip
    assert set(routes) == {"$connect", "$disconnect", "subscribe", "unsubscribe"}
    assert routes["$connect"]["AuthorizationType"] == "AWS_IAM"
    data = load_spec(DEMO_SPEC).to_compiled()
    data["deployment"]["api_auth"] = "none"  # an open REST API: an open WebSocket API too
    open_ = build_template(AgentfnSpec.model_validate(data))["Resources"]
    assert {r["Properties"]["AuthorizationType"] for r in open_.values() if r["Type"] == "AWS::ApiGatewayV2::Route"} == {"NONE"}  # fmt: skip
    support = json.dumps(
        [resources["AgentSupportFunction"]["Properties"], resources["AgentSupportFunctionRole"]]
    )
    assert "execute-api:ManageConnections" in support and "AGENTFN_LIVE_ENDPOINT" in support
    assert f"${{{live.LIVE_API}}}/live/POST/@connections/*" in support
    assert '"WATCH#' in support and '"WATCH#*"' not in support  # its own runs' watchers only
    watcher = json.dumps(function_statements(resources, live.LIVE_FUNCTION))
    assert "dynamodb:Scan" not in watcher and "WATCH#*" in watcher
