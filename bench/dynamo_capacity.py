"""DynamoDB capacity per tool turn, counted from the requests the deployed code path makes.

A scripted agent runs N tool turns (one `echo` call each, then a final answer) on the
embedded stack: the API's service starts the run on its state machine, moto's Step Functions
interpreter executes it and dispatches each Lambda task to the real step handler, whose
engine commits to the runs table on moto's DynamoDB (runtime.store.dynamo). The agent
function publishes to live watchers as deployed (runtime.live.live_ws, no one watching).

Every DynamoDB request is seen through botocore's event hooks (`before-parameter-build`,
`after-call`) and charged the way on-demand mode charges it ("Item sizes and formats",
"Read/write capacity mode"): an item's size is its attribute names plus values; a write
costs 1 unit per started KB of the larger of the item before and after it (a failed
condition is charged too), twice inside a transaction; the KEYS_ONLY `sweep` index costs one
write per entry added or removed; a read costs 1 unit per started 4 KB, half when eventually
consistent, twice in a transaction; a Query is charged on the total size of the items it
read (not what a projection returned), at least one unit.

Per tool turn is the marginal figure: (a run of N turns - a run of M turns) / (N - M), so
the start and the end of a run are not spread over its turns; the whole run is shown too.

    .venv/bin/python bench/dynamo_capacity.py [--turns 50] [--base 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run_cost import PRICES, _index_writes, item_size  # noqa: E402

WRITE_UNIT, READ_UNIT = 1024, 4096
WRITES = ("PutItem", "UpdateItem", "DeleteItem")
NAMES = {"EV": "event", "M": "message", "T": "turn record", "W": "watched flag"}


def kind_of(key: dict[str, Any] | None) -> str:
    """What an item is, from its key (runtime.store.items, runtime.live.live_ws)."""
    if not key:
        return "?"
    pk, sk = key.get("pk", {}).get("S", ""), key.get("sk", {}).get("S", "")
    if pk.startswith("WATCH#"):
        return "watch"
    if pk.startswith("CONN#"):
        return "connection"
    if pk.startswith("RUN#"):
        if sk == "HEAD":
            return "run head"
        return NAMES.get(sk.split("#", 1)[0], sk.split("#", 1)[0].lower() or "run")
    if pk.startswith("SES#"):
        if sk == "STATE":
            return "session state"
        if "#" in sk.removeprefix("R#"):  # R#{run_key}#M#{n}: a message
            part = sk.rsplit("#", 2)[-2]
            return NAMES.get(part, part.lower())
        return "run marker"
    return pk.split("#", 1)[0].lower() or "?"


@dataclass
class Ledger:
    write_units: float = 0.0
    read_units: float = 0.0
    items_written: int = 0
    bytes_written: int = 0
    requests: Counter[str] = field(default_factory=Counter)
    writes_by_kind: Counter[str] = field(default_factory=Counter)  # units
    reads_by_kind: Counter[str] = field(default_factory=Counter)  # units
    watcher_queries: int = 0

    def minus(self, other: Ledger) -> Ledger:
        return Ledger(
            self.write_units - other.write_units,
            self.read_units - other.read_units,
            self.items_written - other.items_written,
            self.bytes_written - other.bytes_written,
            self.requests - other.requests,
            self.writes_by_kind - other.writes_by_kind,
            self.reads_by_kind - other.reads_by_kind,
            self.watcher_queries - other.watcher_queries,
        )

    def scaled(self, factor: float) -> dict[str, Any]:
        return {
            "write_units": self.write_units * factor,
            "read_units": self.read_units * factor,
            "items_written": self.items_written * factor,
            "bytes_written": self.bytes_written * factor,
            "requests": {k: v * factor for k, v in sorted(self.requests.items())},
            "write_units_by_item": {k: v * factor for k, v in self.writes_by_kind.most_common()},
            "read_units_by_item": {k: v * factor for k, v in self.reads_by_kind.most_common()},
            "watcher_queries": self.watcher_queries * factor,
        }


class Meter:
    """Charges every DynamoDB request of the default boto3 session's clients."""

    def __init__(self, quiet_client: Any):
        self.quiet = quiet_client  # an unhooked client: the meter's own look-ups
        self.ledger = Ledger()
        self.lock = threading.Lock()

    def install(self, client: Any) -> None:
        """Hook `client` (the stack's one DynamoDB client: its store and live publisher)."""
        client.meta.events.register("before-parameter-build.dynamodb", self._before)
        client.meta.events.register("after-call.dynamodb", self._after)

    def snapshot(self) -> Ledger:
        with self.lock:
            current = self.ledger
            return Ledger(
                current.write_units,
                current.read_units,
                current.items_written,
                current.bytes_written,
                Counter(current.requests),
                Counter(current.writes_by_kind),
                Counter(current.reads_by_kind),
                current.watcher_queries,
            )

    # ---- hooks --------------------------------------------------------------------------

    def _image(self, table: str, key: dict[str, Any] | None) -> dict[str, Any] | None:
        if not key:
            return None
        answer = self.quiet.get_item(TableName=table, Key=key, ConsistentRead=True)
        item: dict[str, Any] | None = answer.get("Item")
        return item

    @staticmethod
    def _key(request: dict[str, Any]) -> dict[str, Any] | None:
        if "Key" in request:
            key: dict[str, Any] = request["Key"]
            return key
        if "Item" in request:
            return {k: request["Item"][k] for k in ("pk", "sk") if k in request["Item"]}
        return None

    def _before(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        op = model.name
        parts: list[tuple[str, str, dict[str, Any] | None, dict[str, Any]]] = []
        if op in WRITES:
            parts = [(op, params["TableName"], self._key(params), params)]
        elif op == "TransactWriteItems":
            for entry in params["TransactItems"]:
                ((kind, request),) = entry.items()
                parts.append((kind, request["TableName"], self._key(request), request))
        elif op == "BatchWriteItem":
            for table, requests in params["RequestItems"].items():
                for entry in requests:
                    ((kind, request),) = entry.items()
                    key = request.get("Key") or self._key(request)
                    parts.append((kind, table, key, request))
        context["meter"] = [(k, t, key, r, self._image(t, key)) for k, t, key, r in parts]

    def _after(self, parsed: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        op = model.name
        with self.lock:
            self.ledger.requests[op] += 1
        if op in WRITES or op in ("TransactWriteItems", "BatchWriteItem"):
            factor = 2 if op == "TransactWriteItems" else 1
            for kind, table, key, request, before in context.get("meter", []):
                if kind == "ConditionCheck":
                    size = item_size(before)
                    after = before
                else:
                    after = self._image(table, key)
                    attempted = request.get("Item") if "Item" in request else after
                    size = max(item_size(before), item_size(after), item_size(attempted), 1)
                units = factor * math.ceil(size / WRITE_UNIT) + _index_writes(before, after)
                with self.lock:
                    self.ledger.write_units += units
                    self.ledger.writes_by_kind[kind_of(key)] += units
                    if kind != "ConditionCheck":
                        self.ledger.items_written += 1
                        self.ledger.bytes_written += item_size(after)
            return
        consistent = 1.0 if context.get("consistent") else 0.5
        units, kind = 0.0, "?"
        if op == "GetItem":
            units = math.ceil(max(item_size(parsed.get("Item")), 1) / READ_UNIT)
            units *= consistent
            kind = kind_of(context.get("read_key"))
        elif op == "Query":
            items = context.get("full_items", parsed.get("Items", []))
            units = math.ceil(max(sum(item_size(i) for i in items), 1) / READ_UNIT) * consistent
            kind = context.get("read_kind", "?")
            if kind == "watch":
                with self.lock:
                    self.ledger.watcher_queries += 1
        elif op == "TransactGetItems":
            units = 2 * sum(
                math.ceil(max(item_size(r.get("Item")), 1) / READ_UNIT)
                for r in parsed.get("Responses", [])
            )
        elif op == "BatchGetItem":
            units = sum(
                math.ceil(max(item_size(i), 1) / READ_UNIT) * 0.5
                for found in parsed.get("Responses", {}).values()
                for i in found
            )
        with self.lock:
            self.ledger.read_units += units
            self.ledger.reads_by_kind[kind] += units


class ReadMeter(Meter):
    """Notes what a read needs to be charged before it is sent (consistency, full items)."""

    def _before(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        super()._before(params, model, context)
        context["consistent"] = bool(params.get("ConsistentRead"))
        if model.name == "GetItem":
            context["read_key"] = params.get("Key")
        if model.name == "Query":
            values = params.get("ExpressionAttributeValues", {})
            pk = values.get(":pk", {}).get("S", "")
            sk = next((v.get("S", "") for k, v in values.items() if k != ":pk"), "")
            context["read_kind"] = kind_of({"pk": {"S": pk}, "sk": {"S": sk or "HEAD"}})
            if "IndexName" in params:
                context["read_kind"] = "index " + params["IndexName"]
            if "ProjectionExpression" in params:  # charged on whole items: read them
                full = {k: v for k, v in params.items() if k != "ProjectionExpression"}
                full.pop("ExpressionAttributeNames", None)
                context["full_items"] = self.quiet.query(**full).get("Items", [])


# --- the runs ----------------------------------------------------------------------------


def spec_for(turns: int) -> Any:
    """An agent that calls `echo` on each of `turns` - 1 turns, then answers."""
    from tests.runtime.engine.kit import call, make_spec

    usage = {"input_tokens": 1200, "output_tokens": 60}
    script: list[dict[str, Any]] = []
    for n in range(1, turns):
        text = f"Looking up order ORD-{1000 + n} in the order system before answering."
        script.append(
            {
                "text": text,
                "tool_calls": [call("echo", {"text": f"ORD-{1000 + n}: shipped, 2 items"})],
                "usage": usage,
            }
        )
    script.append({"text": "All orders are shipped; each has 2 items.", "usage": usage})
    return make_spec(script, tools=["echo"], max_turns=turns + 5)


class Management:
    """The API Gateway Management API the live publisher posts to (counts posts)."""

    class exceptions:  # the client's attribute
        class GoneException(Exception):
            pass

    def __init__(self) -> None:
        self.posts = 0

    def post_to_connection(self, **_: Any) -> None:
        self.posts += 1


def measure(turns: int, base: int) -> dict[str, Any]:
    import boto3

    from infra.local.aws import LOCAL_REGION, Serialized, embedded_aws
    from infra.local.embedded_stack import EmbeddedStack
    from runtime.live.live_ws import WebSocketPublisher
    from runtime.store.dynamo import DynamoStore
    from tests.helpers import wait_for

    figures: dict[int, Ledger] = {}
    with embedded_aws() as clients:
        # The meter's own look-ups run inside the hooked call, which holds the embedded
        # AWS's lock; the benchmark's polling takes it like the stack's clients do.
        quiet = boto3.session.Session(region_name=LOCAL_REGION).client("dynamodb")
        meter = ReadMeter(quiet)
        meter.install(clients.dynamodb)
        watcher = DynamoStore(Serialized(quiet), clients.table, clients.store().blobs)
        publisher = WebSocketPublisher(clients.dynamodb, clients.table, Management())
        for n in (base, turns):
            stack = EmbeddedStack(
                spec_for(n),
                clients,
                engine_options={"listener": publisher.on_event, "chunks": publisher.on_chunk},
            )
            before = meter.snapshot()
            code, body = stack.service.start("a", "Where are my orders?", wait_seconds=0)
            assert code in (200, 202), body
            run_id = body["run_id"]
            head = wait_for(  # polled through the meter's own client: not counted
                lambda: (h := watcher.load_head(run_id)).status != "running" and h,  # noqa: B023
                what="the run's end",
                timeout=300,
            )
            publisher.flush()
            assert head.status == "succeeded", (head.status, head.error_message)
            assert head.turn == n, head.turn
            figures[n] = meter.snapshot().minus(before)
    marginal = figures[turns].minus(figures[base])
    per_turn = marginal.scaled(1 / (turns - base))
    whole = figures[turns].scaled(1.0)
    cost = (
        per_turn["write_units"] * PRICES["dynamodb_write_unit"]
        + per_turn["read_units"] * PRICES["dynamodb_read_unit"]
    )
    return {"turns": turns, "base": base, "per_tool_turn": per_turn, "run": whole,
            "usd_per_1000_tool_turns": cost * 1000}  # fmt: skip


def report(figures: dict[str, Any]) -> str:
    t = figures["per_tool_turn"]
    run = figures["run"]
    lines = [
        f"DynamoDB per tool turn (marginal, runs of {figures['turns']} vs {figures['base']} "
        "turns, deployed code path on moto):",
        f"  write units {t['write_units']:.2f}   read units {t['read_units']:.2f}   "
        f"items written {t['items_written']:.2f}   bytes written {t['bytes_written']:.0f}",
        f"  watcher queries {t['watcher_queries']:.2f}   USD per 1,000 tool turns "
        f"{figures['usd_per_1000_tool_turns']:.5f}",
        "  requests: " + ", ".join(f"{k} {v:.2f}" for k, v in t["requests"].items() if v),
        "  write units by item: "
        + ", ".join(f"{k} {v:.2f}" for k, v in t["write_units_by_item"].items() if v),
        "  read units by item: "
        + ", ".join(f"{k} {v:.2f}" for k, v in t["read_units_by_item"].items() if v),
        f"Whole {figures['turns']}-turn run: write units {run['write_units']:.0f}, read units "
        f"{run['read_units']:.1f}, items {run['items_written']:.0f}, "
        f"{run['bytes_written'] / 1024:.1f} KB, requests "
        + ", ".join(f"{k} {v:.0f}" for k, v in run["requests"].items() if v),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="turns of the measured run")
    parser.add_argument("--base", type=int, default=10, help="turns of the run subtracted")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.turns, args.base)
    print(json.dumps(figures, indent=2) if args.json else report(figures))


if __name__ == "__main__":
    main()
