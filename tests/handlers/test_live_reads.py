"""What live delivery costs a run (issue 26, target 2): a run nobody watches never queries
for watchers — its function reads the run's watch flag once when it first publishes and
once when the invocation ends — and a watcher who subscribes in the middle of an advance
still gets every event, from the store and then from the publisher's backlog."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import boto3

import handlers.live
from infra.local.aws import LOCAL_REGION
from runtime.engine.loop import Engine
from runtime.live.live_ws import WebSocketPublisher
from tests.handlers.test_live_ws import ENDPOINT, received, subscribe, ws_event
from tests.runtime.engine.kit import call, make_spec

TURNS = 6
SCRIPT: list[dict[str, Any]] = [
    {"text": f"Step {n}.", "tool_calls": [call("echo", {"text": f"ORD-{n}"})]} for n in range(TURNS)
] + [{"text": "All orders found."}]


class Reads:
    """DynamoDB requests of one client, by operation and by the partition they touch."""

    def __init__(self, client: Any):
        self.seen: Counter[tuple[str, str]] = Counter()
        client.meta.events.register("before-parameter-build.dynamodb", self._note)

    def _note(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        key = params.get("Key") or {}
        pk = key.get("pk", {}).get("S") or params.get("ExpressionAttributeValues", {}).get(
            ":pk", {}
        ).get("S", "")
        self.seen[(model.name, pk.split("#", 1)[0])] += 1


def _engine(clients: Any, **options: Any) -> tuple[Engine, WebSocketPublisher]:
    management = boto3.client(
        "apigatewaymanagementapi", endpoint_url=ENDPOINT, region_name=LOCAL_REGION
    )
    publisher = WebSocketPublisher(clients.dynamodb, clients.table, management)
    spec = make_spec(SCRIPT, tools=["echo"], max_turns=TURNS + 2)
    listener = options.pop("listener", publisher.on_event)
    engine = Engine(spec, clients.store(), listener=listener, chunks=publisher.on_chunk, **options)
    return engine, publisher


def test_a_run_nobody_watches_never_queries_for_watchers(aws: Any) -> None:
    engine, publisher = _engine(aws)
    reads = Reads(aws.dynamodb)
    head = engine.start("a", "where are my orders?")
    publisher.flush()  # the start's invocation ends
    head = asyncio.run(engine.advance(head.run_id))
    publisher.flush()  # the advance's invocation ends
    assert head.status == "succeeded" and head.event_seq > 4 * TURNS
    watches = {op: n for (op, pk), n in reads.seen.items() if pk == "WATCH"}
    # No Query for watchers at all; the flag read when each invocation first publishes and
    # again at its end (events went to no one): two invocations, four small GetItems.
    assert watches == {"GetItem": 4}, reads.seen


def test_a_watcher_who_subscribes_mid_advance_gets_every_event(aws: Any) -> None:
    subscribed: list[bool] = []

    def listener(event: Any) -> None:
        publisher.on_event(event)
        if event.seq == 7 and not subscribed:  # while the advance runs
            subscribed.append(True)
            handlers.live.handler(ws_event("subscribe", "midway", subscribe(event.run_id)), None)

    engine, publisher = _engine(aws, listener=listener)
    head = engine.start("a", "where are my orders?")
    publisher.flush()
    reads = Reads(aws.dynamodb)
    head = asyncio.run(engine.advance(head.run_id))
    publisher.flush()
    assert subscribed and head.status == "succeeded"
    seqs = [m["event"]["seq"] for m in received("midway") if m["type"] == "event"]
    assert set(seqs) == set(range(head.event_seq))  # none lost (some twice: seq tells)
    assert seqs[-1] == head.event_seq - 1
    # Until the end of the invocation the cached flag said nobody watched: no Query then;
    # the end's read found the watcher, one Query found its connection.
    assert reads.seen[("Query", "WATCH")] == 1, reads.seen


def test_a_watched_run_queries_its_watchers_for_each_event_and_the_flag_goes_with_them(
    aws: Any,
) -> None:
    engine, publisher = _engine(aws)
    head = engine.start("a", "where are my orders?")
    publisher.flush()
    handlers.live.handler(ws_event("subscribe", "one", subscribe(head.run_id)), None)
    handlers.live.handler(ws_event("subscribe", "two", subscribe(head.run_id)), None)
    handlers.live.handler(ws_event("subscribe", "two", subscribe(head.run_id)), None)  # again
    flag = aws.dynamodb.get_item(
        TableName=aws.table, Key={"pk": {"S": f"WATCH#{head.run_id}"}, "sk": {"S": "FLAG"}}
    )["Item"]
    assert flag["n"] == {"N": "2"}  # two connections, however often they subscribed
    head = asyncio.run(engine.advance(head.run_id))
    publisher.flush()
    for connection in ("one", "two"):
        seqs = [m["event"]["seq"] for m in received(connection) if m["type"] == "event"]
        # run_started from the store on each subscribe, then the rest live, in order, once
        assert set(seqs) == set(range(head.event_seq)), connection
        assert [s for s in seqs if s > 0] == list(range(1, head.event_seq)), connection
    handlers.live.handler(
        ws_event("unsubscribe", "one", {"action": "unsubscribe", "run_id": head.run_id}), None
    )
    left = aws.dynamodb.get_item(
        TableName=aws.table, Key={"pk": {"S": f"WATCH#{head.run_id}"}, "sk": {"S": "FLAG"}}
    )["Item"]
    assert left["n"] == {"N": "1"}
    handlers.live.handler(ws_event("$disconnect", "two"), None)
    items = aws.dynamodb.scan(TableName=aws.table)["Items"]
    assert not [i for i in items if i["pk"]["S"] == f"WATCH#{head.run_id}"]  # flag too
