"""The WebSocket API's function (infra/sam/live.py): who watches which run.

Routes (`$request.body.action`): `$connect` (IAM-authorized by API Gateway: whoever may
connect may ask to watch), `subscribe {run_id, token, after?}` — the token is the right to
watch that run (runtime.live.watch_token: issued by `GET …/runs/{run_id}/watch-token`, so IAM
grants it per agent); then a watch item for the agent functions to find (runtime.live.live_ws),
counted on the run's watch flag (which is what an unwatched run's functions read),
and the run's committed events after `after` sent at once, so a late watcher misses nothing
(events carry `seq`: skip any you have) — `unsubscribe {run_id}`, and `$disconnect`, which
removes the connection's watches (page by page). A connection watches at most
MAX_SUBSCRIPTIONS runs at once. Every item expires with the connection's longest life (2
hours). A message that is not understood or not allowed is answered on the connection with
`{"type": "error", "error_message"}`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

CONNECTION_SECONDS = 2 * 3600  # API Gateway closes a WebSocket connection after 2 hours
MAX_CATCH_UP = 1000  # events sent on subscribing; older ones are on GET …/events
MAX_SUBSCRIPTIONS = 20  # runs one connection may watch at once
PAGE = 100  # watch items read per Query when a connection goes
_clients: dict[str, Any] = {}


def client(name: str, **options: Any) -> Any:
    """One client per service and options for the container, made on first use."""
    from handlers.clients import LazyClient

    key = name + json.dumps(options, sort_keys=True)
    return _clients.setdefault(key, LazyClient(name, **options))


def use_client(name: str, client: Any) -> None:
    """Use `client` for `name` (no options) from now on: `agentfn dev` hands in the local
    stack's own Secrets Manager, as the process's default client may be the user's AWS."""
    _clients[name + json.dumps({}, sort_keys=True)] = client


def _management(event: dict[str, Any]) -> Any:
    context = event["requestContext"]
    endpoint = os.environ.get("AGENTFN_LIVE_ENDPOINT") or (
        f"https://{context['domainName']}/{context['stage']}"
    )
    return client("apigatewaymanagementapi", endpoint_url=endpoint)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    route = event.get("requestContext", {}).get("routeKey", "")
    connection = event.get("requestContext", {}).get("connectionId", "")
    table = os.environ["AGENTFN_TABLE"]
    dynamodb = client("dynamodb")
    if route == "$connect":
        return {"statusCode": 200}
    if route == "$disconnect":
        _forget_connection(dynamodb, table, connection)
        return {"statusCode": 200}
    try:
        body = json.loads(event.get("body") or "{}")
        if not isinstance(body, dict):
            raise ValueError("send a JSON object")
        run_id = body.get("run_id")
        if not isinstance(run_id, str) or not 0 < len(run_id) <= 200:
            raise ValueError("run_id: the id of a run is required")
        if route == "subscribe":
            after = body.get("after", -1)
            if isinstance(after, bool) or not isinstance(after, int) or after < -1:
                raise ValueError("after: a whole number of -1 or more")
            _check_token(body.get("token"), run_id)
            _subscribe(event, dynamodb, table, connection, run_id, after)
        elif route == "unsubscribe":
            _unwatch(dynamodb, table, connection, run_id)
            _send(event, connection, {"type": "unsubscribed", "run_id": run_id})
        else:
            raise ValueError(f"unknown action {body.get('action')!r}: subscribe or unsubscribe")
    except ValueError as exc:
        _send(event, connection, {"type": "error", "error_message": str(exc)})
    return {"statusCode": 200}


def _subscribe(
    event: dict[str, Any], dynamodb: Any, table: str, connection: str, run_id: str, after: int
) -> None:
    from runtime.store.items import head_key

    head = dynamodb.get_item(
        TableName=table,
        Key=dict(zip(("pk", "sk"), ({"S": k} for k in head_key(run_id)), strict=True)),
    ).get("Item")
    if head is None:
        raise ValueError(f"run {run_id!r} not found")
    expires = {"N": str(int(time.time()) + CONNECTION_SECONDS)}
    watch, mirror = ({"pk": {"S": pk}, "sk": {"S": sk}} for pk, sk in _keys(connection, run_id))
    watched = _watched(dynamodb, table, connection)
    new = mirror["sk"]["S"] not in watched
    if new and len(watched) >= MAX_SUBSCRIPTIONS:
        raise ValueError(_too_many())
    dynamodb.put_item(TableName=table, Item={**mirror, "expires_at": expires})
    if new and len(_watched(dynamodb, table, connection)) > MAX_SUBSCRIPTIONS:
        # subscribes racing on one connection: each counts after writing its own mirror, so
        # no more than the cap can stay
        dynamodb.delete_item(TableName=table, Key=mirror)
        raise ValueError(_too_many())
    dynamodb.put_item(TableName=table, Item={**watch, "expires_at": expires})
    if new:  # the run is watched: its functions read this flag, not its watches
        from runtime.live.live_ws import flag_key

        dynamodb.update_item(
            TableName=table,
            Key=flag_key(run_id),
            UpdateExpression="ADD n :one SET expires_at = :e",
            ExpressionAttributeValues={":one": {"N": "1"}, ":e": expires},
        )
    _send(event, connection, {"type": "subscribed", "run_id": run_id})
    for item in _events_after(run_id, after):  # after the watch exists: nothing falls between
        _send(event, connection, {"type": "event", "event": item})


def _events_after(run_id: str, after: int) -> list[dict[str, Any]]:
    from runtime.store.dynamo import DynamoStore, S3Blobs
    from runtime.structs import dump

    store = DynamoStore(
        client("dynamodb"),
        os.environ["AGENTFN_TABLE"],
        S3Blobs(client("s3"), os.environ.get("AGENTFN_BUCKET", "")),
    )
    events = store.list_events(run_id, after=after, limit=MAX_CATCH_UP)
    return [dump(e) for e in events]


def _keys(connection: str, run_id: str) -> list[tuple[str, str]]:
    """The watch (found by the run's functions) and its mirror (found on disconnect)."""
    return [(f"WATCH#{run_id}", f"CONN#{connection}"), (f"CONN#{connection}", f"WATCH#{run_id}")]


def _unwatch(dynamodb: Any, table: str, connection: str, run_id: str) -> None:
    from runtime.live.live_ws import forget_watch

    forget_watch(dynamodb, table, run_id, connection)  # counted off the run's flag
    pk, sk = _keys(connection, run_id)[1]
    dynamodb.delete_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}})


def _check_token(token: Any, run_id: str) -> None:
    from runtime.live.watch_token import NoWatchKey, stack_key, verify

    try:
        key = stack_key(lambda: client("secretsmanager"))
    except NoWatchKey as exc:
        raise ValueError(str(exc)) from None
    verify(key, token, run_id)  # TokenRefused is a ValueError: answered on the connection


def _too_many() -> str:
    return f"a connection watches at most {MAX_SUBSCRIPTIONS} runs: unsubscribe one first"


def _watched(dynamodb: Any, table: str, connection: str) -> list[str]:
    """The sort keys (`WATCH#{run_id}`) of the connection's watches, every page of them."""
    found: list[str] = []
    query: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": f"CONN#{connection}"}},
        "ProjectionExpression": "sk",
        "ConsistentRead": True,  # a subscribe racing this one must be counted
        "Limit": PAGE,
    }
    while True:
        answer = dynamodb.query(**query)
        found += [item["sk"]["S"] for item in answer.get("Items", [])]
        if not answer.get("LastEvaluatedKey"):
            return found
        query["ExclusiveStartKey"] = answer["LastEvaluatedKey"]


def _forget_connection(dynamodb: Any, table: str, connection: str) -> None:
    for sk in _watched(dynamodb, table, connection):
        _unwatch(dynamodb, table, connection, sk.removeprefix("WATCH#"))


def _send(event: dict[str, Any], connection: str, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":"), default=str).encode()
    management = _management(event)
    try:
        management.post_to_connection(ConnectionId=connection, Data=data)
    except management.exceptions.GoneException:
        _forget_connection(client("dynamodb"), os.environ["AGENTFN_TABLE"], connection)


if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":  # deployment.snapstart
    from handlers import snapshot

    if snapshot.at_init(__name__):
        snapshot.register()  # its clients are dropped and random reseeded in each copy
