"""Long runs on the embedded AWS (moto DynamoDB + S3): bounded items, O(1) writes per step."""

from __future__ import annotations

import asyncio
from typing import Any

from infra.local.aws import embedded_aws
from runtime.engine.loop import Engine
from tests.runtime.engine.kit import call, make_spec


def _item_size(item: dict[str, Any]) -> int:
    """DynamoDB's item size: attribute names plus values (UTF-8)."""
    total = 0
    for name, value in item.items():
        total += len(name.encode())
        ((kind, raw),) = value.items()
        total += len(raw.encode()) if kind == "S" else len(str(raw))
    return total


def _all_items(clients: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": clients.table}
    while True:
        page = clients.dynamodb.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_a_200_turn_run_with_a_1_mb_tool_output_keeps_every_item_small() -> None:
    turns = 200
    script: list[dict[str, Any]] = [{"tool_calls": [call("big", {"size": 1_000_000})]}]
    script += [{"tool_calls": [call("echo", {"text": f"step {i}"})]} for i in range(turns - 2)]
    script += [{"text": "All 200 turns done."}]
    spec = make_spec(script, max_turns=250)
    with embedded_aws() as clients:
        engine = Engine(spec, clients.store())
        head = asyncio.run(engine.run("a", "go"))
        assert head.status == "succeeded" and head.turn == turns
        result = engine.result(head.run_id)
        assert result["result"] == "All 200 turns done."
        assert len(result["tool_calls"]) == turns - 1
        items = _all_items(clients)
        largest = max(_item_size(i) for i in items)
        assert largest < 100 * 1024, largest
        offloaded = [i for i in items if "doc_ref" in i]
        assert offloaded, "the 50,000-character tool message must live in S3"
        for item in offloaded:  # the item keeps a pointer and a short preview, not the body
            assert len(item["preview"]["S"]) <= 1024 and "doc" not in item
            key = item["doc_ref"]["S"]
            assert clients.s3.get_object(Bucket=clients.bucket, Key=key)["ContentLength"] > 8 * 1024
        head_item = next(i for i in items if i["sk"]["S"] == "HEAD")
        assert _item_size(head_item) < 8 * 1024  # the head does not grow with the run
        # The 1 MB output is whole in S3, capped in context.
        first = result["tool_calls"][0]
        assert first["success"] and len(first["output"]) <= 2000
        call_id = first["tool_call_id"]
        ref = f"tool-cache/a/{head.session_id}/{head.run_id}/{call_id}"
        body = clients.s3.get_object(Bucket=clients.bucket, Key=ref)["Body"].read()
        assert len(body) == 1_000_000
