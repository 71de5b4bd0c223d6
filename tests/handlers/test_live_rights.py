"""Who may watch which run live on the WebSocket API (issue 22, point 13), on moto.

A connection alone may watch nothing: `subscribe` needs a watch token, issued by the REST
route `GET …/runs/{run_id}/watch-token` (under the agent's path, so IAM grants it per agent)
and signed with the stack's generated key. The attacks: subscribing without a token, with
another run's token, an expired one, one signed with another key, one with its expiry
pushed out; subscribing to more runs than a connection may watch, also in a burst of
concurrent subscribes; and watches beyond one Query page, which `$disconnect` and the
publisher must still all find.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import boto3
import pytest

import handlers.api
import handlers.live
from infra.local.aws import LOCAL_REGION, Serialized
from infra.sam import live
from infra.sam.template import build_template
from runtime.engine.loop import Engine
from runtime.live.live_ws import WebSocketPublisher
from runtime.live.watch_token import issue
from runtime.service import RunService
from runtime.spec import AgentfnSpec
from runtime.stack import Stack
from tests.handlers.test_handlers import FakeContext, apigw_event, route_of
from tests.handlers.test_live_ws import (
    ENDPOINT,
    SCRIPT,
    received,
    subscribe,
    token_for,
    ws_event,
)
from tests.helpers import DEMO_SPEC, load_spec
from tests.runtime.engine.kit import make_spec


def two_agents() -> AgentfnSpec:
    data = make_spec(SCRIPT, tools=["echo"]).to_compiled()
    data["agents"]["b"] = dict(data["agents"]["a"])
    return AgentfnSpec.model_validate(data)


def engine_on(clients: Any) -> tuple[Engine, WebSocketPublisher]:
    management = boto3.client("apigatewaymanagementapi", endpoint_url=ENDPOINT, region_name=LOCAL_REGION)  # fmt: skip
    publisher = WebSocketPublisher(clients.dynamodb, clients.table, management)
    engine = Engine(two_agents(), clients.store(), listener=publisher.on_event, chunks=publisher.on_chunk)  # fmt: skip
    return engine, publisher


def rest(engine: Engine, path: str) -> dict[str, Any]:
    """GET `path` on the API handler (a RunService over the same store)."""
    handlers.api.configure(RunService(engine, Stack(), sfn=None, lambda_client=None))
    try:
        resource, params = route_of("GET", path)
        event = apigw_event("GET", path, resource, None, params)
        return handlers.api.handler(event, FakeContext())
    finally:
        handlers.api.configure(None)


def errors(connection: str) -> list[str]:
    return [m["error_message"] for m in received(connection) if m["type"] == "error"]


def watch_items(clients: Any) -> list[tuple[str, str]]:
    items = clients.dynamodb.scan(TableName=clients.table)["Items"]
    return [(i["pk"]["S"], i["sk"]["S"]) for i in items if i["pk"]["S"].startswith(("WATCH#", "CONN#"))]  # fmt: skip


def test_a_connection_without_the_runs_token_watches_nothing(aws: Any) -> None:
    engine, publisher = engine_on(aws)
    mine = engine.start("a", "where is ORD-1?").run_id
    theirs = engine.start("b", "where is ORD-2?").run_id  # the run the watcher has no right to
    publisher.flush()
    good = token_for(theirs)
    version, expires, mac = good.split(".")
    other_key = issue(b"k" * 48, theirs)[0]
    for token, said in [
        (None, "token: required"),
        (token_for(mine), "not valid for this run"),  # a run it may watch, a token it holds
        (issue(_key(), theirs, now=0)[0], "expired"),  # the stack's key, long ago
        (other_key, "not valid for this run"),  # signed with another key
        (f"{version}.{int(expires) + 86400}.{mac}", "not valid for this run"),  # a longer life
        ("v1.x.y", "not a watch token"),
    ]:
        body = {"action": "subscribe", "run_id": theirs, **({"token": token} if token else {})}
        handlers.live.handler(ws_event("subscribe", "snoop", body), None)
        assert said in errors("snoop")[-1]
    assert watch_items(aws) == []
    asyncio.run(engine.advance(theirs))
    publisher.flush()
    assert {m["type"] for m in received("snoop")} == {"error"}  # not one event, not one chunk
    assert all(theirs not in json.dumps(m) for m in received("snoop"))
    # the right token does it
    handlers.live.handler(ws_event("subscribe", "owner", subscribe(theirs)), None)
    assert received("owner")[0] == {"type": "subscribed", "run_id": theirs}
    assert received("owner")[-1]["event"]["type"] == "run_completed"


def _key() -> bytes:
    from runtime.live.watch_token import stack_key

    return stack_key(lambda: boto3.client("secretsmanager"))


def test_watch_tokens_come_from_the_rest_api_per_agent(aws: Any) -> None:
    engine, _ = engine_on(aws)
    run_a = engine.start("a", "where is ORD-1?").run_id
    run_b = engine.start("b", "where is ORD-2?").run_id
    answer = rest(engine, f"/agents/a/runs/{run_a}/watch-token")
    assert answer["statusCode"] == 200, answer
    assert answer["multiValueHeaders"]["Cache-Control"] == ["no-store"]
    body = json.loads(answer["body"])
    assert body["run_id"] == run_a and body["expires_at"] > 0
    handlers.live.handler(ws_event("subscribe", "w", {"action": "subscribe", "run_id": run_a, "token": body["token"]}), None)  # fmt: skip
    assert received("w")[0] == {"type": "subscribed", "run_id": run_a}
    # a grant on agent a's paths gives no token for agent b's runs
    refused = rest(engine, f"/agents/a/runs/{run_b}/watch-token")
    assert refused["statusCode"] == 404 and "token" not in json.loads(refused["body"])
    assert rest(engine, "/runs/no-such-run/watch-token")["statusCode"] == 404
    assert rest(engine, f"/runs/{run_b}/watch-token")["statusCode"] == 200  # the operators' path


def test_the_template_generates_the_key_and_grants_it_to_two_functions() -> None:
    resources = build_template(load_spec(DEMO_SPEC))["Resources"]
    secret = resources[live.WATCH_KEY]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    assert "GenerateSecretString" in secret["Properties"]
    assert "SecretString" not in secret["Properties"]  # no value in the template
    from tests.infra.cfn import function_statements

    functions = [n for n, r in resources.items() if r["Type"] == "AWS::Serverless::Function"]
    policies = {n: json.dumps(function_statements(resources, n)) for n in functions}
    readers = [
        name
        for name, policy in policies.items()
        if "secretsmanager:GetSecretValue" in policy
        and json.dumps({"Ref": live.WATCH_KEY}) in policy
    ]
    assert sorted(readers) == ["ApiFunction", live.LIVE_FUNCTION]
    events = resources["ApiFunction"]["Properties"]["Events"]
    paths = {e["Properties"]["Path"] for e in events.values()}
    assert {"/runs/{run_id}/watch-token", "/agents/{agent}/runs/{run_id}/watch-token"} <= paths


def test_a_connection_watches_at_most_the_cap(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handlers.live, "MAX_SUBSCRIPTIONS", 3)
    engine, _ = engine_on(aws)
    runs = [engine.start("a", f"order {n}").run_id for n in range(5)]
    for run_id in runs:
        handlers.live.handler(ws_event("subscribe", "greedy", subscribe(run_id)), None)
    subscribed = [m["run_id"] for m in received("greedy") if m["type"] == "subscribed"]
    assert subscribed == runs[:3]
    assert errors("greedy") == [handlers.live._too_many()] * 2
    assert len([k for k in watch_items(aws) if k[0] == "CONN#greedy"]) == 3
    handlers.live.handler(ws_event("subscribe", "greedy", subscribe(runs[0])), None)  # again: fine
    assert len(errors("greedy")) == 2
    handlers.live.handler(ws_event("unsubscribe", "greedy", {"action": "unsubscribe", "run_id": runs[0]}), None)  # fmt: skip
    handlers.live.handler(ws_event("subscribe", "greedy", subscribe(runs[3])), None)
    assert received("greedy")[-1]["type"] != "error"
    assert {k[1] for k in watch_items(aws) if k[0] == "CONN#greedy"} == {f"WATCH#{r}" for r in runs[1:4]}  # fmt: skip


def test_a_burst_of_subscribes_on_one_connection_stays_within_the_cap(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Subscribes racing on one connection (API Gateway may run them at once): each request
    to DynamoDB is atomic (Serialized), the handlers interleave between them."""
    monkeypatch.setattr(handlers.live, "MAX_SUBSCRIPTIONS", 3)
    clients: dict[str, Any] = {}
    monkeypatch.setattr(handlers.live, "client", lambda name, **options: clients.setdefault(name, Serialized(boto3.client(name, **options))))  # fmt: skip
    engine, _ = engine_on(aws)
    runs = [engine.start("a", f"order {n}").run_id for n in range(10)]
    bodies = [subscribe(run_id) for run_id in runs]
    start = threading.Barrier(len(runs))

    def go(body: dict[str, Any]) -> None:
        start.wait()
        handlers.live.handler(ws_event("subscribe", "burst", body), None)

    threads = [threading.Thread(target=go, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    mirrors = {sk for pk, sk in watch_items(aws) if pk == "CONN#burst"}
    watches = {pk for pk, sk in watch_items(aws) if sk == "CONN#burst"}
    assert 1 <= len(mirrors) <= 3 and watches == mirrors  # no watch without its mirror
    admitted = {m["run_id"] for m in received("burst") if m["type"] == "subscribed"}
    assert {f"WATCH#{r}" for r in admitted} == mirrors
    assert len(errors("burst")) == len(runs) - len(admitted)


class PagedDynamoDB:
    """DynamoDB's paging, made visible: a Query answers at most `page` items and a
    LastEvaluatedKey (DynamoDB stops at 1 MB; the watches here are small)."""

    def __init__(self, client: Any, page: int = 25):
        self._client = client
        self._page = page
        self.exceptions = client.exceptions

    def query(self, **kwargs: Any) -> Any:
        return self._client.query(**{**kwargs, "Limit": min(kwargs.get("Limit", self._page), self._page)})  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_every_page_of_watches_is_found_on_disconnect_and_by_the_publisher(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    paged = PagedDynamoDB(aws.dynamodb)

    def client(name: str, **options: Any) -> Any:
        return paged if name == "dynamodb" else boto3.client(name, region_name=LOCAL_REGION, **options)  # fmt: skip

    monkeypatch.setattr(handlers.live, "client", client)
    engine, _ = engine_on(aws)
    run_id = engine.start("a", "where is ORD-1?").run_id
    # a connection that collected many watches (left by earlier deployments, before the cap)
    for n in range(60):
        for pk, sk in handlers.live._keys("hoarder", f"{run_id[:8]}-old-{n:03d}"):
            aws.dynamodb.put_item(TableName=aws.table, Item={"pk": {"S": pk}, "sk": {"S": sk}})
    handlers.live.handler(ws_event("$disconnect", "hoarder"), None)
    assert [k for k in watch_items(aws) if "hoarder" in k[0] + k[1]] == []
    # a run watched by more connections than one page holds: every one gets its events
    for n in range(40):
        for pk, sk in handlers.live._keys(f"fan-{n:02d}", run_id):
            aws.dynamodb.put_item(TableName=aws.table, Item={"pk": {"S": pk}, "sk": {"S": sk}})
    management = boto3.client("apigatewaymanagementapi", endpoint_url=ENDPOINT, region_name=LOCAL_REGION)  # fmt: skip
    publisher = WebSocketPublisher(paged, aws.table, management)
    engine = Engine(two_agents(), aws.store(), listener=publisher.on_event, chunks=publisher.on_chunk)  # fmt: skip
    asyncio.run(engine.advance(run_id))
    publisher.flush()
    for n in range(40):
        assert received(f"fan-{n:02d}")[-1]["event"]["type"] == "run_completed", n
