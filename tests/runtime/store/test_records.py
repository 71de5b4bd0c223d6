"""One record per commit on DynamoDB (runtime.store.records, issue 26): a commit inside a
run is one conditional PutItem, a run's start and end one transaction with the session's
items; the record's key is the version check; and a crash between a record and the HEAD
item it moves never hides a run from the sweeper."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from infra.local.aws import embedded_aws
from runtime.clock import FakeClock
from runtime.engine.loop import Engine
from runtime.errors import StateConflict
from runtime.store.base import Commit
from runtime.store.dynamo import DynamoStore
from runtime.store.memory import MemoryStore
from runtime.structs import encode, replace
from tests.runtime.engine.kit import call, make_spec

TURNS = 5
SPEC = make_spec(
    [{"text": f"step {n}", "tool_calls": [call("echo", {"text": f"n{n}"})]} for n in range(TURNS)]
    + [{"text": "done"}],
    tools=["echo"],
    max_turns=TURNS + 2,
)


class Requests:
    """Counts a client's requests by operation; crashes on the first write that `crash_on`
    picks (a process dying right there)."""

    def __init__(self, client: Any):
        self.client = client
        self.exceptions = client.exceptions
        self.seen: Counter[str] = Counter()
        self.crash_on: Any = None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.client, name)

        def call(**kwargs: Any) -> Any:
            self.seen[name] += 1
            if name == "put_item":
                self.seen["put_item " + kwargs["Item"]["sk"]["S"][:2]] += 1
            if self.crash_on is not None and self.crash_on(name, kwargs):
                self.crash_on = None
                raise SimulatedCrash(name)
            return method(**kwargs)

        return call


class SimulatedCrash(BaseException):
    """Not an Exception: nothing in the engine can swallow it."""


def test_a_tool_turn_is_two_puts_and_a_run_is_its_newest_record() -> None:
    with embedded_aws() as clients:
        requests = Requests(clients.dynamodb)
        store = DynamoStore(requests, clients.table, clients.store().blobs)
        head = asyncio.run(Engine(SPEC, store, clock=FakeClock()).run("a", "go"))
        assert head.status == "succeeded" and head.turn == TURNS + 1
        # the start and the end (with the session's marker and state) are transactions;
        # every other commit — the lease, each answer, each tool result — one PutItem
        assert requests.seen["transact_write_items"] == 2
        assert requests.seen["put_item T#"] == head.version - 2
        # the HEAD item only when the sweep entry moves (5-minute buckets): here, once
        assert requests.seen["put_item HE"] == 1
        assert store.load_head(head.run_id) == head
        items = clients.dynamodb.query(
            TableName=clients.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"RUN#{head.run_id}"}},
        )["Items"]
        records = [i for i in items if i["sk"]["S"].startswith("T#")]
        assert len(records) == head.version  # one per commit, nothing else per turn
        assert [i["sk"]["S"] for i in items if not i["sk"]["S"].startswith("T#")] == ["HEAD"]
        assert "sweep_at" not in next(i for i in items if i["sk"]["S"] == "HEAD")  # finished
        assert max(len(i["doc"]["S"]) for i in records) < 1024  # the head as stored


@pytest.mark.parametrize("kind", ["memory", "dynamodb"])
def test_two_commits_from_one_head_only_the_first_is_stored(kind: str) -> None:
    with embedded_aws() as clients:
        store: Any = MemoryStore() if kind == "memory" else clients.store()
        head = Engine(SPEC, store, clock=FakeClock()).start("a", "go")
        first = replace(head, version=head.version + 1, turn=1)
        second = replace(head, version=head.version + 1, turn=2)
        store.commit(Commit(head=first, expected_version=head.version))
        with pytest.raises(StateConflict):
            store.commit(Commit(head=second, expected_version=head.version))
        assert store.load_head(head.run_id).turn == 1


def test_a_crash_between_a_record_and_its_index_entry_leaves_the_run_findable() -> None:
    clock = FakeClock()
    with embedded_aws() as clients:
        requests = Requests(clients.dynamodb)
        store = DynamoStore(requests, clients.table, clients.store().blobs)
        engine = Engine(SPEC, store, clock=clock)
        head = engine.start("a", "go")
        clock.advance(2000)  # the next commit moves the sweep entry later: written after it

        def index_put(name: str, kwargs: dict[str, Any]) -> bool:
            return name == "put_item" and kwargs["Item"]["sk"]["S"] == "HEAD"

        requests.crash_on = index_put
        with pytest.raises(SimulatedCrash):
            asyncio.run(engine.advance(head.run_id))
        committed = store.load_head(head.run_id)
        assert committed.version == head.version + 1  # the record is the commit
        # The entry still says the start's time: the sweeper looks early (and re-reads the
        # head), never late.
        assert head.run_id in store.due_runs(head.sweep_after + 1)
        assert committed.sweep_after > head.sweep_after
        clock.advance(engine.lease_seconds + 1)  # the crashed worker's lease runs out
        done = asyncio.run(Engine(SPEC, store, clock=clock).advance(head.run_id))
        assert done.status == "succeeded" and done.turn == TURNS + 1
        assert store.due_runs(done.updated_at + 10**6) == []  # the end left the index


def test_a_commit_too_large_for_one_item_keeps_its_content_in_s3() -> None:
    from runtime.messages import UserMessage

    with embedded_aws() as clients:
        store = clients.store()
        head = Engine(SPEC, store, clock=FakeClock()).start("a", "go")
        texts = [f"{n}" + "y" * 7000 for n in range(12)]  # each inline-sized, 84 KB in all
        new = replace(head, version=head.version + 1, msg_seq=head.msg_seq + len(texts))
        numbered = [(head.msg_seq + i, UserMessage(content=t)) for i, t in enumerate(texts)]
        store.commit(Commit(head=new, expected_version=head.version, messages=numbered))
        item = clients.dynamodb.query(
            TableName=clients.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": f"RUN#{head.run_id}"}},
            ScanIndexForward=False,
            Limit=1,
        )["Items"][0]
        assert "body" in item and "msgs" not in item  # a pointer, not 84 KB
        assert sum(len(str(v)) for v in item.values()) < 4 * 1024
        loaded = store.load_messages(store.load_head(head.run_id))
        assert [m.content for m in loaded[1:]] == texts


@pytest.mark.parametrize("sizes", [[3000, 3000, 3000], [9000, 10], [10, 20]])
def test_events_are_kept_inline_unless_one_alone_is_over_the_body_limit(sizes: list[int]) -> None:
    """A commit's events are serialised together (one pass) unless together they pass the
    body limit; then each one over it goes to the blob store alone, as it always did."""
    from runtime.events import Event
    from runtime.store.records import BODY_LIMIT

    store = MemoryStore()
    head = Engine(SPEC, store, clock=FakeClock()).start("a", "go")
    events = [
        Event(
            seq=head.event_seq + i,
            type="hook_decision",
            at=1.5,
            run_id=head.run_id,
            data={"reason": "é" * n},
        )
        for i, n in enumerate(sizes)
    ]
    new = replace(head, version=head.version + 1, event_seq=head.event_seq + len(events))
    store.commit(Commit(head=new, expected_version=head.version, events=events))
    assert store.list_events(head.run_id, after=head.event_seq - 1) == events
    offloaded = [key for key in store.blobs.objects if key.startswith(f"bodies/{head.run_id}/E")]
    assert len(offloaded) == sum(1 for n in sizes if 2 * n > BODY_LIMIT)  # "é": two bytes
    record = store.items[
        (
            "RUN#" + head.run_id,
            max(k for p, k in store.items if p == "RUN#" + head.run_id and k.startswith("T#")),
        )
    ]
    inline = [encode(e) for e in events if 2 * len(e.data["reason"]) <= BODY_LIMIT]
    assert all(doc in record["evs"] for doc in inline)
