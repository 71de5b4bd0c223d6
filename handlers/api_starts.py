"""Starting an agent's run from the API: once per (caller, key) when the request carries a
key (a REST Idempotency-Key, an A2A messageId), with Powertools idempotency records in
their own table (AGENTFN_IDEMPOTENCY_TABLE). Here rather than in handlers.api so the A2A
route (handlers.a2a) starts runs the same way without importing the REST module."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from handlers.api_requests import idempotent, time_left
from handlers.api_service import the_service

IDEMPOTENCY_TABLE_ENV = "AGENTFN_IDEMPOTENCY_TABLE"
Answer = tuple[int, dict[str, Any]]

_UNSET: Any = object()
_idempotency: Any = _UNSET  # a Powertools persistence layer; None: keys are ignored
_starter: Any = None  # (layer, config, idempotent start) for that layer
_request_time_left = threading.local()  # for the idempotent start, which takes one payload


def use_idempotency(layer: Any) -> None:
    """This persistence layer for the records (None: keys are ignored)."""
    global _idempotency, _starter
    _idempotency, _starter = layer, None


def idempotency_store(table: str, client: Any = None) -> Any:
    """Records in their own table (Powertools' layout: key `id`, TTL `expiration`), one
    partition per key: no hot partition, and only the API may read or write them."""
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    return DynamoDBPersistenceLayer(table_name=table, boto3_client=client)


def idempotency_layer() -> Any:
    global _idempotency
    if _idempotency is _UNSET:
        table = os.environ.get(IDEMPOTENCY_TABLE_ENV)
        _idempotency = idempotency_store(table) if table else None
    return _idempotency


def _start(r: dict[str, Any], seconds_left: float | None = None) -> Answer:
    answer: Answer = the_service().start(
        r["agent"],
        r["input"],
        r["session_id"],
        r["wait_seconds"],
        time_left=seconds_left,
        max_turns=r.get("max_turns"),
    )
    return answer


def start_run(agent: str, body: dict[str, Any], key: str | None, caller: str, ctx: Any) -> Answer:
    """service.start; with a key, once per (caller, key): a retry gets the first answer."""
    layer = idempotency_layer() if key is not None else None
    if layer is None:
        return _start({"agent": agent, **body}, time_left(ctx))
    config, start = _idempotent_start(layer)
    if hasattr(ctx, "get_remaining_time_in_millis"):
        config.register_lambda_context(ctx)  # an in-progress record expires with this call
    _request_time_left.value = time_left(ctx)
    return start(request={"key": [caller, key], "request": {"agent": agent, **body}})


def _idempotent_start(layer: Any) -> tuple[Any, Callable[..., Answer]]:
    """Powertools' idempotent_function around service.start, for this persistence layer.

    The key is [caller, header value]; the request is the payload a retry must repeat. A
    finished run's answer is stored as its run_id (its result may not fit an item) and read
    again on replay: a finished run no longer changes."""
    global _starter
    if _starter is not None and _starter[0] is layer:
        return _starter[1], _starter[2]
    from aws_lambda_powertools.utilities.idempotency.serialization.base import (
        BaseIdempotencySerializer,
    )

    class FirstAnswer(BaseIdempotencySerializer):
        def to_dict(self, data: Any) -> dict[str, Any]:
            code, body = data
            return {"code": code, "run_id": body["run_id"], "body": None if code == 200 else body}

        def from_dict(self, data: dict[str, Any]) -> Any:
            return int(data["code"]), data["body"] or the_service().get(data["run_id"])

    def start_once(*, request: dict[str, Any]) -> Answer:
        return _start(request["request"], getattr(_request_time_left, "value", None))

    config, start = idempotent(layer, start_once, FirstAnswer(), "StartRun")
    _starter = (layer, config, start)
    return config, start
